// The pure stages of an import batch: line → item, the batch's keys and its turn behind the batch ahead, its parts, and its outcome counts.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { identityKey } from '../items/keys.ts';
import { normalizeItem } from '../items/payload.ts';
import type { NormalizeResult } from '../items/normalized-item.ts';
import { addNormalized } from '../items/upsert.ts';
import type { PreparedItems, UpsertEntry } from '../items/upsert.ts';
import type { FingerprintedItem } from '../items/store.ts';
import { lineFingerprint } from './fingerprint.ts';
import type { BatchCounts } from './job-store.ts';
import type { FileLine } from './line-reader.ts';
import { errorMessageOf, errorTypeOf, parseLine, rawLineOf } from './lines.ts';
import type { LineError } from './lines.ts';

// The spec's transaction size.
export const BATCH_LINES = 100;
// Lines read at once while a re-import finds its lines stored already: their fingerprints are
// looked up in one statement and, as long as they all prove stored, their counters and cursor
// are recorded in one. Lines that write are still committed 100 at a time.
export const KNOWN_RUN_LINES = 5 * BATCH_LINES;

/** A line read: parsed, validated and normalized, or its line error. */
export type LineItem = { ok: true; normalized: NormalizeResult } | { ok: false; error: LineError };

export function itemOfLine(line: FileLine): LineItem {
  const parsed = parseLine(line);
  return parsed.ok ? { ok: true, normalized: normalizeItem(parsed.value) } : parsed;
}

/** What a batch of new lines can write: its items' identity keys and SKUs. */
export interface BatchKeys {
  readonly identities: ReadonlySet<string>;
  readonly skus: ReadonlySet<string>;
}

export function keysOf(lines: readonly LineItem[]): BatchKeys {
  const identities = new Set<string>();
  const skus = new Set<string>();
  for (const line of lines) {
    if (!line.ok || !line.normalized.ok) continue;
    const { item } = line.normalized;
    identities.add(identityKey(item.externalSystem, item.externalId));
    if (item.sku !== null) skus.add(item.sku);
  }
  return { identities, skus };
}

/** A batch of new lines in flight, as the batch after it sees it. */
export interface BatchAhead {
  readonly keys: BatchKeys;
  /** Settles once its items are written: it holds every lock it will take on items, categories and brands. */
  readonly written: Promise<void>;
  /** Settles once it committed (rejects when it rolled back). */
  readonly committed: Promise<void>;
}

/** True when `keys` name one of the items or SKUs of the batch ahead: then the next batch waits for its commit. */
export function sharesKeys(ahead: BatchAhead, keys: BatchKeys): boolean {
  for (const key of keys.identities) if (ahead.keys.identities.has(key)) return true;
  for (const sku of keys.skus) if (ahead.keys.skus.has(sku)) return true;
  return false;
}

/**
 * How a batch takes its turn in the database. Alone (no batch ahead), it began after the batch
 * before it committed. Behind a batch of new lines that shares none of its items or SKUs, it
 * begins while that one is still in the database:
 * - its lookup may run while the batch ahead writes; that batch changes none of the items it
 *   looks up, and can change a SKU's owner only by moving one of its own items to another SKU,
 *   so a lookup that found a SKU owned by one of the batch ahead's items is made again once that
 *   batch committed (`beforeWrite`);
 * - it writes once the batch ahead has written, so the only lock it can wait for is that of a
 *   category or brand the batch ahead created, released by that batch's commit, and that batch
 *   never waits for it;
 * - it records its counters and cursor once the batch ahead committed, and rolls back when that
 *   batch did, so batches commit in file order. A batch whose write carries its record
 *   therefore writes only once the batch ahead committed, and writes nothing when that batch
 *   failed (`beforeRecordedWrite`).
 */
export interface BatchTurn {
  /** Settles once this batch's items are written (or its commit settled without writing). */
  readonly written: Promise<void>;
  readonly wrote: () => void;
  /** ImportBatchWrite.waitTurn: waits for the batch ahead to have written; true to look up again after its commit. */
  readonly beforeWrite: (skuOwners: ReadonlyMap<string, string>) => Promise<boolean>;
  /** The same for a write that carries the batch's record: waits for the batch ahead to commit. */
  readonly beforeRecordedWrite: (skuOwners: ReadonlyMap<string, string>) => Promise<boolean>;
  /** The batch ahead's commit (resolved when there is none). */
  readonly aheadCommitted: Promise<void>;
}

export function batchTurn(ahead: BatchAhead | undefined): BatchTurn {
  let wrote!: () => void;
  const written = new Promise<void>((resolve) => {
    wrote = () => resolve();
  });
  let lookedAgain = false;
  const ownsAheadSku = (skuOwners: ReadonlyMap<string, string>) =>
    ahead !== undefined && [...skuOwners.values()].some((owner) => ahead.keys.identities.has(owner));
  const beforeWrite = async (skuOwners: ReadonlyMap<string, string>): Promise<boolean> => {
    if (ahead === undefined || lookedAgain) return false;
    await ahead.written;
    if (!ownsAheadSku(skuOwners)) return false;
    lookedAgain = true;
    // Its failure fails this batch when it records its counters.
    await ahead.committed.catch(() => undefined);
    return true;
  };
  const beforeRecordedWrite = async (skuOwners: ReadonlyMap<string, string>): Promise<boolean> => {
    if (ahead === undefined || lookedAgain) return false;
    // Its failure fails this batch before it writes anything.
    await ahead.committed;
    lookedAgain = true;
    return ownsAheadSku(skuOwners);
  };
  return { written, wrote, beforeWrite, beforeRecordedWrite, aheadCommitted: ahead?.committed ?? Promise.resolve() };
}

export interface PreparedBatch {
  readonly lines: readonly FileLine[];
  /** Each line's fingerprint; undefined for a line too long to hold. */
  readonly fingerprints: ReadonlyArray<string | undefined>;
  /** Each line read ahead, by position; absent when the batch is expected to be lines already stored. */
  readonly ahead?: readonly LineItem[];
}

// Lines handled between two turns of the event loop, so the batch in the database is not kept
// waiting for its next statement.
const PREPARE_SLICE = 10;

/** The CPU work of a batch ahead of its transaction: fingerprints, and reading each line if asked. */
export async function prepareBatch(lines: readonly FileLine[], readAhead: boolean): Promise<PreparedBatch> {
  const fingerprints: Array<string | undefined> = [];
  const ahead: LineItem[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (i > 0 && i % PREPARE_SLICE === 0) await nextTurn();
    const line = lines[i]!;
    fingerprints.push(line.bytes === undefined ? undefined : lineFingerprint(line.bytes));
    if (readAhead) ahead.push(itemOfLine(line));
  }
  return readAhead ? { lines, fingerprints, ahead } : { lines, fingerprints };
}

/** The BATCH_LINES lines of `batch` from `start` (the batch itself when it has no more). */
export function partOf(batch: PreparedBatch, start: number): PreparedBatch {
  if (start === 0 && batch.lines.length <= BATCH_LINES) return batch;
  const end = start + BATCH_LINES;
  const lines = batch.lines.slice(start, end);
  const fingerprints = batch.fingerprints.slice(start, end);
  return batch.ahead ? { lines, fingerprints, ahead: batch.ahead.slice(start, end) } : { lines, fingerprints };
}

/** The entries of `known` (by position in a batch) for the `length` lines from `start`, by position among them. */
export function positionsIn<V>(known: ReadonlyMap<number, V>, start: number, length: number): Map<number, V> {
  const part = new Map<number, V>();
  for (const [i, key] of known) if (i >= start && i < start + length) part.set(i - start, key);
  return part;
}

/** The lines of a batch that go through the upsert path, and what the others already decided. */
export interface LinesToUpsert {
  /** The lines whose items go to the upsert path, in file order (the items' positions). */
  readonly valueLines: readonly FileLine[];
  readonly items: PreparedItems;
  /** Lines that could not be read as an item. */
  readonly lineErrors: readonly LineError[];
  /** Lines proved stored by their fingerprint, and not written again. */
  readonly unchanged: number;
  /** Those lines, with the item each carries. */
  readonly knownLines: ReadonlyArray<{ readonly lineNumber: number; readonly item: FingerprintedItem }>;
}

/**
 * The lines of a batch that go through the upsert path, in file order. A line whose fingerprint
 * an item carries (`known`, by position) is the line that last wrote that item: it is unchanged,
 * and is not even parsed. Unless another line of the batch writes the same item: then it goes
 * through the upsert path too, so the item's lines still apply in file order.
 */
export function linesToUpsert(batch: PreparedBatch, known: ReadonlyMap<number, FingerprintedItem>): LinesToUpsert {
  const read: Array<LineItem | undefined> = batch.lines.map((line, i) => (known.has(i) ? undefined : batch.ahead?.[i] ?? itemOfLine(line)));
  const written = new Set<string>();
  for (const item of read) {
    if (item?.ok && item.normalized.ok) written.add(identityKey(item.normalized.item.externalSystem, item.normalized.item.externalId));
  }
  let unchanged = known.size;
  for (const [i, { key }] of known) {
    if (!written.has(key)) continue;
    unchanged -= 1;
    read[i] = batch.ahead?.[i] ?? itemOfLine(batch.lines[i]!);
  }
  const valueLines: FileLine[] = [];
  const lineErrors: LineError[] = [];
  const items: PreparedItems = { entries: [], valid: [] };
  read.forEach((item, i) => {
    if (item === undefined) return;
    if (!item.ok) {
      lineErrors.push(item.error);
      return;
    }
    addNormalized(items, item.normalized, valueLines.length, batch.fingerprints[i]);
    valueLines.push(batch.lines[i]!);
  });
  items.entries.length = valueLines.length;
  const knownLines = [...known].filter(([i]) => read[i] === undefined).map(([i, item]) => ({ lineNumber: batch.lines[i]!.lineNumber, item }));
  return { valueLines, items, lineErrors, unchanged, knownLines };
}

/** A batch's counters and line errors, given the entries of its lines that went through the upsert path (by position). */
export function outcomeOf(part: PreparedBatch, { valueLines, lineErrors, unchanged }: LinesToUpsert, entries: readonly UpsertEntry[]) {
  const counts: BatchCounts = { processed: part.lines.length, succeeded: 0, failed: 0, unchanged, created: 0, updated: 0 };
  const batchErrors = [...lineErrors];
  for (const entry of entries) {
    if (entry.status === 'error') {
      const line = valueLines[entry.index]!;
      batchErrors.push({
        lineNumber: line.lineNumber, externalId: entry.externalId, errorType: errorTypeOf(entry.error),
        errorMessage: errorMessageOf(entry.error), rawLine: rawLineOf(line),
      });
    } else if (entry.status === 'unchanged') counts.unchanged += 1;
    else {
      counts.succeeded += 1;
      if (entry.status === 'created') counts.created += 1;
      else counts.updated += 1;
    }
  }
  counts.failed = batchErrors.length;
  return { counts, batchErrors };
}
