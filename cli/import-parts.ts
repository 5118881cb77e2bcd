// Splits an import file into parts of at most 100 MB at line boundaries, so each part is one job (the spec's per-file limit).
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';

export interface FilePart {
  /** Byte range [start, end) of the file. */
  readonly start: number;
  readonly end: number;
  /** 1-based line number of the part's first line in the whole file. */
  readonly firstLine: number;
}

const LF = 0x0a;

/** One part when the file fits; otherwise cuts at the last LF before each `maxBytes` boundary. */
export async function splitFile(path: string, maxBytes: number): Promise<FilePart[]> {
  const size = (await stat(path)).size;
  if (size <= maxBytes) return [{ start: 0, end: size, firstLine: 1 }];
  const parts: FilePart[] = [];
  let partStart = 0;
  let partFirstLine = 1;
  let lastCut = -1; // offset just past the last LF seen in the current part
  let linesBeforeCut = 0; // LFs from the file start up to lastCut
  let lines = 0; // LFs seen so far
  let offset = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    let at = chunk.indexOf(LF);
    while (at >= 0) {
      const cut = offset + at + 1;
      lines += 1;
      if (cut - partStart > maxBytes) {
        if (lastCut <= partStart) throw new Error(`line ${lines} is longer than ${maxBytes} bytes; the file cannot be split`);
        parts.push({ start: partStart, end: lastCut, firstLine: partFirstLine });
        partStart = lastCut;
        partFirstLine = linesBeforeCut + 1;
        if (cut - partStart > maxBytes) throw new Error(`line ${lines} is longer than ${maxBytes} bytes; the file cannot be split`);
      }
      lastCut = cut;
      linesBeforeCut = lines;
      at = chunk.indexOf(LF, at + 1);
    }
    offset += chunk.length;
  }
  if (size - partStart > maxBytes) {
    if (lastCut <= partStart) throw new Error(`the last line is longer than ${maxBytes} bytes; the file cannot be split`);
    parts.push({ start: partStart, end: lastCut, firstLine: partFirstLine });
    partStart = lastCut;
    partFirstLine = linesBeforeCut + 1;
    if (size - partStart > maxBytes) throw new Error(`the last line is longer than ${maxBytes} bytes; the file cannot be split`);
  }
  if (size > partStart) parts.push({ start: partStart, end: size, firstLine: partFirstLine });
  return parts;
}
