// Streams an import file as lines with their byte offsets, in bounded memory (a line over 1 MB is cut short).
import type { Readable } from 'node:stream';

// File rules: a line may hold up to 1 MB; rawLine keeps the first 4 KB of any line.
export const MAX_LINE_BYTES = 1024 * 1024;
export const RAW_LINE_BYTES = 4096;

const LF = 0x0a;
const CR = 0x0d;
const BOM = [0xef, 0xbb, 0xbf];

export interface FileLine {
  /** 1-based physical line number (empty lines count). */
  readonly lineNumber: number;
  /** Byte offset just past this line's LF (or the end of the file): where the next line starts. */
  readonly endOffset: number;
  /** The line without LF, trailing CR or BOM; undefined when longer than MAX_LINE_BYTES. */
  readonly bytes: Buffer | undefined;
  /** The first RAW_LINE_BYTES of the line, kept also for lines too long to hold. */
  readonly head: Buffer;
  /** Length of the whole line in bytes (without LF). */
  readonly length: number;
}

export interface ReadPosition {
  /** Lines before the start (the resume cursor's line). */
  readonly line: number;
  /** Byte offset of the start (the resume cursor's offset); 0 = the start of the file. */
  readonly offset: number;
}

const isBlank = (byte: number) => byte === 0x20 || byte === 0x09 || byte === CR;

/** The stream's chunks without a leading UTF-8 BOM, however the first bytes are chunked. */
async function* withoutBom(stream: AsyncIterable<Buffer>, onBom: () => void): AsyncGenerator<Buffer> {
  let start: Buffer | undefined = Buffer.alloc(0);
  for await (const chunk of stream) {
    if (start === undefined) {
      yield chunk;
      continue;
    }
    start = Buffer.concat([start, chunk]);
    if (start.length < BOM.length && BOM.slice(0, start.length).every((b, i) => start![i] === b)) continue;
    const hasBom = start.length >= BOM.length && BOM.every((b, i) => start![i] === b);
    if (hasBom) onBom();
    const rest = hasBom ? start.subarray(BOM.length) : start;
    start = undefined;
    if (rest.length > 0) yield rest;
  }
  if (start !== undefined && start.length > 0) yield start;
}

/** Empty lines (also only spaces, tabs or a CR) are ignored by the file rules. */
export function isEmptyLine(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i += 1) if (!isBlank(bytes[i]!)) return false;
  return true;
}

/**
 * Yields every non-empty line of `stream`, which starts at `from.offset` of the file. Holds at
 * most one line (≤ 1 MB) plus one chunk: a longer line is skipped to its LF keeping its head.
 */
export async function* readLines(stream: Readable, from: ReadPosition = { line: 0, offset: 0 }): AsyncGenerator<FileLine> {
  let lineNumber = from.line;
  let offset = from.offset;
  let parts: Buffer[] = [];
  let partsLength = 0;
  let length = 0;
  let head: Buffer | undefined;
  let tooLong = false;
  const atFileStart = from.offset === 0;

  const finish = (last: Buffer): FileLine | undefined => {
    lineNumber += 1;
    let bytes: Buffer | undefined;
    if (!tooLong) bytes = parts.length === 0 ? last : Buffer.concat([...parts, last], partsLength + last.length);
    const total = (tooLong ? length : partsLength) + last.length;
    const lineHead = head ?? (bytes ?? last).subarray(0, RAW_LINE_BYTES);
    parts = [];
    partsLength = 0;
    length = 0;
    head = undefined;
    const wasTooLong = tooLong;
    tooLong = false;
    if (bytes !== undefined) {
      if (bytes.length > 0 && bytes[bytes.length - 1] === CR) bytes = bytes.subarray(0, bytes.length - 1);
      if (isEmptyLine(bytes)) return undefined;
      return { lineNumber, endOffset: offset, bytes, head: bytes.subarray(0, RAW_LINE_BYTES), length: total };
    }
    return wasTooLong ? { lineNumber, endOffset: offset, bytes: undefined, head: lineHead, length: total } : undefined;
  };

  const take = (piece: Buffer) => {
    if (piece.length === 0) return;
    if (tooLong) {
      length += piece.length;
      return;
    }
    if (partsLength + piece.length > MAX_LINE_BYTES) {
      // Over the limit: keep only the head for rawLine and drop the rest as it streams by.
      const first = parts[0] ?? piece;
      head = first.length >= RAW_LINE_BYTES
        ? Buffer.from(first.subarray(0, RAW_LINE_BYTES))
        : Buffer.concat([...parts, piece]).subarray(0, RAW_LINE_BYTES);
      length = partsLength + piece.length;
      parts = [];
      partsLength = 0;
      tooLong = true;
      return;
    }
    // Copied: the stream may reuse its chunk buffers.
    parts.push(Buffer.from(piece));
    partsLength += piece.length;
  };

  const chunks = atFileStart ? withoutBom(stream, () => { offset += BOM.length; }) : (stream as AsyncIterable<Buffer>);
  for await (const chunk of chunks) {
    let start = 0;
    for (;;) {
      const lf = chunk.indexOf(LF, start);
      if (lf < 0) {
        take(chunk.subarray(start));
        offset += chunk.length - start;
        break;
      }
      const piece = chunk.subarray(start, lf);
      offset += lf + 1 - start;
      start = lf + 1;
      let line: FileLine | undefined;
      if (tooLong) {
        length += piece.length;
        line = finish(Buffer.alloc(0));
      } else if (partsLength + piece.length > MAX_LINE_BYTES) {
        take(piece);
        line = finish(Buffer.alloc(0));
      } else {
        line = finish(piece);
      }
      if (line) yield line;
    }
  }
  if (partsLength > 0 || tooLong) {
    const line = finish(Buffer.alloc(0));
    if (line) yield line;
  }
}

/**
 * The counting pass (docs/imports.md, "Jobs and their rules"): non-empty lines, and whether the file opens like a JSON array.
 * Keeps no chunk once the next is read (ObjectStorage.readChunks may reuse its buffer).
 */
export async function scanFile(stream: AsyncIterable<Buffer>): Promise<{ nonEmptyLines: number; jsonArray: boolean }> {
  let nonEmptyLines = 0;
  let lineHasContent = false;
  let firstByte: number | undefined;
  for await (const chunk of withoutBom(stream, () => undefined)) {
    for (let i = 0; i < chunk.length; i += 1) {
      const byte = chunk[i]!;
      if (byte === LF) {
        if (lineHasContent) nonEmptyLines += 1;
        lineHasContent = false;
      } else if (!lineHasContent && !isBlank(byte)) {
        lineHasContent = true;
        firstByte ??= byte;
        // The rest of the line cannot change the count: jump to its end.
        const lf = chunk.indexOf(LF, i);
        if (lf < 0) break;
        i = lf - 1;
      }
    }
  }
  if (lineHasContent) nonEmptyLines += 1;
  return { nonEmptyLines, jsonArray: firstByte === 0x5b };
}
