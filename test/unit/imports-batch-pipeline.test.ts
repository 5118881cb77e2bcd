// The pure stages of an import batch: line → item, keys, turns, parts, the lines that go to the upsert path, and outcome counts.
import assert from 'node:assert/strict';
import test from 'node:test';
import { ProductError } from '../../platform/errors.ts';
import { writesInOneStatement } from '../../domain/items/import-write.ts';
import { identityKey } from '../../domain/items/keys.ts';
import {
  BATCH_LINES, batchTurn, itemOfLine, keysOf, linesToUpsert, outcomeOf, partOf, positionsIn, prepareBatch, sharesKeys,
} from '../../domain/imports/batch-pipeline.ts';
import type { BatchAhead, PreparedBatch } from '../../domain/imports/batch-pipeline.ts';
import { lineFingerprint } from '../../domain/imports/fingerprint.ts';
import type { FileLine } from '../../domain/imports/line-reader.ts';

let offset = 0;
function fileLine(lineNumber: number, text: string): FileLine {
  const bytes = Buffer.from(text);
  offset += bytes.length + 1;
  return { lineNumber, endOffset: offset, bytes, head: bytes.subarray(0, 4096), length: bytes.length };
}

const item = (externalId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ externalSystem: 'erp', externalId, name: `Item ${externalId}`, ...extra });

const settled = async (promise: Promise<unknown>) => {
  let done = false;
  void promise.then(() => { done = true; }, () => { done = true; });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

test('a line becomes an item, a line error, or an item that failed validation', () => {
  const ok = itemOfLine(fileLine(1, item('A')));
  assert.ok(ok.ok && ok.normalized.ok && ok.normalized.item.externalId === 'A');
  const broken = itemOfLine(fileLine(2, '{"externalSystem":'));
  assert.ok(!broken.ok && broken.error.lineNumber === 2 && broken.error.errorType === 'validation');
  const invalid = itemOfLine(fileLine(3, JSON.stringify({ externalSystem: 'erp', externalId: 'B' })));
  assert.ok(invalid.ok && !invalid.normalized.ok && invalid.normalized.externalId === 'B');
});

test('a batch names its identities and SKUs; batches that share one take turns', () => {
  const keys = keysOf([item('A', { sku: 'S-1' }), item('B'), '[]'].map((text, i) => itemOfLine(fileLine(i + 1, text))));
  assert.deepEqual([...keys.identities], [identityKey('erp', 'A'), identityKey('erp', 'B')]);
  assert.deepEqual([...keys.skus], ['S-1']);
  const ahead: BatchAhead = { keys, written: Promise.resolve(), committed: Promise.resolve() };
  assert.equal(sharesKeys(ahead, { identities: new Set([identityKey('erp', 'B')]), skus: new Set() }), true);
  assert.equal(sharesKeys(ahead, { identities: new Set([identityKey('erp', 'C')]), skus: new Set(['S-1']) }), true);
  assert.equal(sharesKeys(ahead, { identities: new Set([identityKey('erp', 'C')]), skus: new Set(['S-2']) }), false);
});

test('a turn behind a batch ahead: writes once it wrote, looks up again after its commit only for a SKU it owns', async () => {
  let wrote!: () => void;
  let committed!: () => void;
  const ahead: BatchAhead = {
    keys: { identities: new Set([identityKey('erp', 'A')]), skus: new Set(['S-1']) },
    written: new Promise<void>((resolve) => { wrote = resolve; }),
    committed: new Promise<void>((resolve) => { committed = resolve; }),
  };
  const turn = batchTurn(ahead);
  const notOwned = turn.beforeWrite(new Map([['S-9', identityKey('erp', 'Z')]]));
  assert.equal(await settled(notOwned), false, 'waits for the batch ahead to have written');
  wrote();
  assert.equal(await notOwned, false);

  const second = batchTurn(ahead);
  const owned = second.beforeWrite(new Map([['S-1', identityKey('erp', 'A')]]));
  assert.equal(await settled(owned), false, 'a SKU the batch ahead owns waits for its commit');
  committed();
  assert.equal(await owned, true, 'and the lookup is made again');
  assert.equal(await second.beforeWrite(new Map([['S-1', identityKey('erp', 'A')]])), false, 'once');
  assert.equal(await settled(second.aheadCommitted), true);
});

test('a write that carries its batch record waits for the commit ahead, and fails with it', async () => {
  const failing: BatchAhead = { keys: { identities: new Set(), skus: new Set() }, written: Promise.resolve(), committed: Promise.reject(new Error('rolled back')) };
  failing.committed.catch(() => undefined);
  await assert.rejects(batchTurn(failing).beforeRecordedWrite(new Map()), /rolled back/);
  const alone = batchTurn(undefined);
  assert.equal(await alone.beforeWrite(new Map()), false);
  assert.equal(await alone.beforeRecordedWrite(new Map()), false);
  assert.equal(await settled(alone.written), false);
  alone.wrote();
  assert.equal(await settled(alone.written), true);
});

test('a batch is prepared with its fingerprints, read ahead or not, and cut into parts of BATCH_LINES', async () => {
  const lines = Array.from({ length: BATCH_LINES + 5 }, (_, i) => fileLine(i + 1, item(`P-${i}`)));
  const read = await prepareBatch(lines, true);
  assert.equal(read.ahead?.length, lines.length);
  assert.equal(read.fingerprints[0], lineFingerprint(lines[0]!.bytes!));
  const known = await prepareBatch(lines, false);
  assert.equal(known.ahead, undefined);
  const second = partOf(read, BATCH_LINES);
  assert.deepEqual(second.lines.map((l) => l.lineNumber), [101, 102, 103, 104, 105]);
  assert.equal(second.ahead?.length, 5);
  const small = await prepareBatch(lines.slice(0, 3), false);
  assert.equal(partOf(small, 0), small);
  assert.deepEqual([...positionsIn(new Map([[1, 'a'], [101, 'b'], [104, 'c']]), BATCH_LINES, 5)], [[1, 'b'], [4, 'c']]);
});

/** An item found by a line's fingerprint. */
const stored = (externalId: string) => ({ key: identityKey('erp', externalId), id: `id-${externalId}`, contentHash: 'hash' });

test('lines proved stored skip the upsert path unless another line of the batch writes their item', async () => {
  const lines = [item('A'), item('B'), 'not json', item('A', { price: 2 }), item('C')].map((text, i) => fileLine(i + 1, text));
  const batch: PreparedBatch = await prepareBatch(lines, false);
  // Line 1 (A) and line 5 (C) carry fingerprints of stored items; line 4 writes A again.
  const known = new Map([[0, stored('A')], [4, stored('C')]]);
  const chosen = linesToUpsert(batch, known);
  assert.deepEqual(chosen.valueLines.map((l) => l.lineNumber), [1, 2, 4]);
  assert.equal(chosen.unchanged, 1);
  assert.deepEqual(chosen.lineErrors.map((e) => e.lineNumber), [3]);
  assert.deepEqual(chosen.items.valid.map((v) => [v.index, v.item.externalId, v.fingerprint]),
    [[0, 'A', batch.fingerprints[0]], [1, 'B', batch.fingerprints[1]], [2, 'A', batch.fingerprints[3]]]);
  assert.equal(writesInOneStatement(chosen.items), false, 'A twice: two rounds');
  assert.equal(writesInOneStatement(linesToUpsert(batch, new Map([[0, stored('X')]])).items), true, 'line 1 skipped: A once');
  assert.equal(writesInOneStatement({ entries: [], valid: chosen.items.valid.slice(0, 2) }), true);
});

test('a batch outcome counts each line once: created, updated, unchanged, failed with its line error', async () => {
  const lines = [item('A'), item('B'), item('C'), '[1]', item('D')].map((text, i) => fileLine(i + 1, text));
  const batch = await prepareBatch(lines, true);
  const chosen = linesToUpsert(batch, new Map([[4, stored('D')]]));
  const [a, b, c] = chosen.items.valid.map((v) => v.item);
  const outcome = outcomeOf(batch, chosen, [
    { index: 0, status: 'created', serviceId: 'x', item: a! },
    { index: 1, status: 'updated', serviceId: 'y', item: b! },
    { index: 2, status: 'error', externalId: c!.externalId, error: new ProductError('conflict', 'SKU taken', [{ path: 'sku', message: 'is used' }]) },
  ]);
  assert.deepEqual(outcome.counts, { processed: 5, succeeded: 2, failed: 2, unchanged: 1, created: 1, updated: 1 });
  assert.deepEqual(outcome.batchErrors.map((e) => [e.lineNumber, e.errorType, e.externalId]), [[4, 'validation', null], [3, 'conflict', 'C']]);
  assert.equal(outcome.batchErrors[1]!.errorMessage, 'sku: SKU taken');
});
