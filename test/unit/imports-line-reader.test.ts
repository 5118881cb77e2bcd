// The import line reader and splitter: lines and offsets across chunk boundaries, bounded memory, the counting pass, CLI parts.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { splitFile } from '../../cli/import-parts.ts';
import { MAX_LINE_BYTES, readLines, scanFile } from '../../domain/imports/line-reader.ts';
import { createLocalStorage } from '../../platform/storage/local.ts';

/** The bytes as a stream of `size`-byte chunks, so every boundary case is crossed. */
const chunked = (bytes: Buffer, size: number) =>
  Readable.from((function* () { for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size); })());

const lines = async (bytes: Buffer, size: number, from = { line: 0, offset: 0 }) => {
  const out = [];
  for await (const l of readLines(chunked(bytes, size), from)) {
    out.push({ n: l.lineNumber, end: l.endOffset, text: l.bytes?.toString('utf8'), length: l.length });
  }
  return out;
};

test('lines, numbers and end offsets are the same whatever the chunking; BOM, CR, blank lines handled', async () => {
  const file = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}\r\n\n  \r\n{"b":22}\n{"c":333}')]);
  const expected = [
    { n: 1, end: 12, text: '{"a":1}', length: 8 },
    { n: 4, end: 26, text: '{"b":22}', length: 8 },
    { n: 5, end: 35, text: '{"c":333}', length: 9 },
  ];
  for (const size of [1, 2, 3, 5, 7, 64]) assert.deepEqual(await lines(file, size), expected, `chunks of ${size}`);
  // Resuming from a committed cursor reads the rest with the right numbers.
  assert.deepEqual(await lines(file.subarray(12), 4, { line: 1, offset: 12 }), expected.slice(1));
});

test('a line over 1 MB is reported with its head and length, without being held whole', async () => {
  const long = Buffer.alloc(MAX_LINE_BYTES * 20, 'x');
  const file = Buffer.concat([Buffer.from('{"ok":1}\n'), long, Buffer.from('\n{"ok":2}\n')]);
  const before = process.memoryUsage().arrayBuffers;
  const seen = [];
  for await (const l of readLines(chunked(file, 64 * 1024))) seen.push(l);
  assert.deepEqual(seen.map((l) => [l.lineNumber, l.bytes === undefined, l.length]), [[1, false, 8], [2, true, long.length], [3, false, 8]]);
  assert.equal(seen[1]!.head.length, 4096);
  // At most about one line limit is ever buffered, never the 20 MB line.
  assert.ok(process.memoryUsage().arrayBuffers - before < MAX_LINE_BYTES * 4, 'the long line was buffered whole');
});

test('the counting pass counts non-empty lines and recognizes a JSON array', async () => {
  assert.deepEqual(await scanFile(chunked(Buffer.from('\uFEFF{"a":1}\n\n \n{"b":2}\r\n{"c":3}'), 3)), { nonEmptyLines: 3, jsonArray: false });
  assert.deepEqual(await scanFile(chunked(Buffer.from('\n  [\n{"a":1}\n]\n'), 2)), { nonEmptyLines: 3, jsonArray: true });
  assert.deepEqual(await scanFile(chunked(Buffer.from('\uFEFF[{"a":1}]'), 1)), { nonEmptyLines: 1, jsonArray: true });
});

test('the local driver hands the counting pass a file in one reused buffer, and the count is exact', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'catalog-chunks-'));
  const storage = createLocalStorage({ dir, publicBaseUrl: 'http://127.0.0.1', secret: 'test-secret' });
  // About 1.2 MB: several 256 KB chunks, with lines across every boundary.
  const file = Buffer.from(Array.from({ length: 20_000 }, (_, i) => (i % 7 === 0 ? ' \r' : `{"n":${i},"pad":"${'p'.repeat(i % 90)}"}`)).join('\n'));
  writeFileSync(join(dir, 'f.jsonl'), file);
  const copies: Buffer[] = [];
  const buffers = new Set<ArrayBufferLike>();
  for await (const chunk of storage.readChunks('f.jsonl')) {
    copies.push(Buffer.from(chunk));
    buffers.add(chunk.buffer);
  }
  assert.ok(copies.length > 3, `${copies.length} chunks`);
  assert.ok(Buffer.concat(copies).equals(file), 'the chunks are the file');
  assert.equal(buffers.size, 1, 'every chunk was read into the same buffer');
  assert.deepEqual(await scanFile(storage.readChunks('f.jsonl')), { nonEmptyLines: 20_000 - Math.ceil(20_000 / 7), jsonArray: false });
});

test('the CLI splits a file at line ends into parts no larger than the limit, numbering their first lines', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'catalog-split-')), 'f.jsonl');
  const content = Array.from({ length: 10 }, (_, i) => `${'x'.repeat(9)}${i}`).join('\n'); // 10 lines of 10 bytes, no final LF
  writeFileSync(path, content);
  const parts = await splitFile(path, 35);
  assert.deepEqual(parts, [
    { start: 0, end: 33, firstLine: 1 }, { start: 33, end: 66, firstLine: 4 }, { start: 66, end: 99, firstLine: 7 }, { start: 99, end: 109, firstLine: 10 },
  ]);
  assert.deepEqual(await splitFile(path, 1000), [{ start: 0, end: 109, firstLine: 1 }]);
  await assert.rejects(splitFile(path, 5), /longer than 5 bytes/);
});
