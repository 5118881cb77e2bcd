// One round of the upsert path (no identity twice): look up, decide each outcome, write, and isolate what fails.
import { databaseFailure, productErrorOf } from '../../platform/db/pg-errors.ts';
import type { Db } from '../../platform/db/sql.ts';
import { query } from '../../platform/db/sql.ts';
import { ProductError, conflict } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { lockNamedAssets } from '../media/asset-store.ts';
import { registerMedia } from '../media/register.ts';
import { identityKey, identityOf, nameKey } from './keys.ts';
import type { NormalizedItem } from './normalized-item.ts';
import { lookup, writeInput, writeItems, writeItemsWithBatchRecord } from './store.ts';
import type { BatchRecord, Lookup, NewName, StoredRow, WriteCandidate, WriteInput, WrittenRow } from './store.ts';
import type { ItemRow } from './view.ts';
import type { VersionSource } from './version-source.ts';

export type UpsertOutcome = 'created' | 'updated' | 'unchanged';

export type UpsertEntry =
  | { index: number; status: UpsertOutcome; serviceId: string; item: NormalizedItem; stored?: ItemRow }
  | { index: number; status: 'error'; externalId: string | null; error: ProductError };

/** A valid input, normalized. */
export interface ValidInput {
  readonly index: number;
  readonly item: NormalizedItem;
  /** The import line's fingerprint (domain/imports/fingerprint.ts), stored with the item when written. */
  readonly fingerprint?: string;
  /** The trace context of the request it came with, when several requests share a write (single upserts). */
  readonly traceparent?: string;
}

/**
 * What a round's write does with its items and its failures; the entry points (upsert.ts,
 * single-upserts.ts, import-write.ts) each name one.
 * - `request`: a database error is isolated, each item then written alone (in a savepoint when
 *   in the caller's transaction); with `returnStored`, entries carry `stored`, taken from the
 *   lookup when unchanged and returned by the write otherwise.
 * - `batchWithRecord`: outside a transaction, the batch record (given the outcomes decided and how
 *   many items the write sends) commits in the write's statement; its gate refusing throws
 *   BatchRecordRefused, a database error WriteFailed, and either way nothing is written.
 * - `inTransaction`: in the caller's transaction; `isolate` puts the write in a savepoint and
 *   isolates each item's failure, `abort` takes none and throws WriteFailed.
 * - `dryRun`: every outcome decided, nothing written: no item, category, brand or event.
 */
export type WriteMode =
  | { readonly kind: 'request'; readonly returnStored: boolean }
  | { readonly kind: 'batchWithRecord'; readonly batchRecord: BatchRecordOf }
  | { readonly kind: 'inTransaction'; readonly onDatabaseError: 'isolate' | 'abort' }
  | { readonly kind: 'dryRun' };

/**
 * The batch's own record (its line errors, counters and cursor) to commit in the write's
 * statement. Called right before the write with the outcomes the lookup decided and how many
 * items the write sends; not called when there is nothing to write.
 */
export type BatchRecordOf = (decided: readonly UpsertEntry[], writing: number) => BatchRecord;

/** How a round is written: its mode, and the inputs the entry points that need them give. */
export interface RoundWrite {
  readonly mode: WriteMode;
  /** MEDIA_REFRESH_AGE_HOURS in ms, for the media registration of written items. */
  readonly mediaRefreshAgeMs: number;
  /** Prefix of validation paths for the input at `index` (a bulk body's `items.3.`). */
  readonly pathPrefix?: ((index: number) => string) | undefined;
  /** Resolves once writing may start; true to look up again first (an import batch's turn). */
  readonly waitTurn?: ((skuOwners: ReadonlyMap<string, string>) => Promise<boolean>) | undefined;
  /** Where the input at `index` comes from, recorded with its version. */
  readonly sourceOf?: ((index: number) => VersionSource) | undefined;
}

/** The batch record's gate refused: the write wrote nothing. */
export class BatchRecordRefused extends Error {
  constructor() {
    super('the batch record in the write did not apply; nothing was written');
  }
}

/** A write without a savepoint (or with a batch record) failed in the database: nothing of it stays, and the caller's transaction is aborted. */
export class WriteFailed extends Error {
  constructor(cause: unknown) {
    super('a write without a savepoint failed; roll back and write again with savepoints', { cause });
  }
}

const returnsStored = (mode: WriteMode): boolean => mode.kind === 'request' && mode.returnStored;

export async function upsertRound(db: Db, catalogId: string, round: readonly ValidInput[], how: RoundWrite): Promise<UpsertEntry[]> {
  const { mode } = how;
  const items = round.map((r) => r.item);
  let found = await lookup(db, catalogId, items, returnsStored(mode));
  let { results, candidates, input } = decide(round, found, how);
  while (await how.waitTurn?.(found.skuOwners)) {
    found = await lookup(db, catalogId, items, returnsStored(mode));
    ({ results, candidates, input } = decide(round, found, how));
  }
  if (input === undefined) return results;
  // The one-statement write cannot wait for asset state changes first: the caller writes again in a transaction.
  if (mode.kind === 'batchWithRecord' && candidates.some((c) => c.candidate.hadMedia)) throw new WriteFailed(new Error('a stored item names media'));
  const batchRecord = mode.kind === 'batchWithRecord' ? mode.batchRecord(results, candidates.length) : undefined;
  const savepoint = !(mode.kind === 'inTransaction' && mode.onDatabaseError === 'abort');
  try {
    results.push(...await writeBatch(db, catalogId, candidates, input, how.mediaRefreshAgeMs, { returnStored: returnsStored(mode), savepoint, batchRecord }));
  } catch (error) {
    if (!isDatabaseError(error)) throw error;
    if (mode.kind === 'batchWithRecord' || !savepoint) throw new WriteFailed(error);
    // A concurrent writer took a SKU between lookup and write, or a row broke a constraint:
    // find the culprit by writing one item at a time, each in its own savepoint.
    for (const one of candidates) {
      try {
        const alone = await lookup(db, catalogId, [one.candidate.item]);
        const again = { ...one.candidate, isNew: !alone.items.has(identityKey(one.candidate.item.externalSystem, one.candidate.item.externalId)) };
        results.push(...await writeBatch(db, catalogId, [one], inputFor([again], alone), how.mediaRefreshAgeMs, { returnStored: false, savepoint: true }));
      } catch (itemError) {
        if (!isDatabaseError(itemError)) throw itemError;
        const prefix = how.pathPrefix?.(one.index);
        results.push({ index: one.index, status: 'error', externalId: one.candidate.item.externalId, error: databaseError(itemError, one.candidate.item, prefix) });
      }
    }
  }
  return results;
}

/**
 * Each item's outcome as far as the lookup decides it (unchanged, a SKU conflict, or created and
 * updated in a dry run) and the write of the others, built ahead: waitTurn may then keep it
 * waiting for its turn without the build adding to the wait.
 */
function decide(round: readonly ValidInput[], found: Lookup, how: RoundWrite) {
  const results: UpsertEntry[] = [];
  const candidates: Array<{ index: number; candidate: WriteCandidate }> = [];
  const claimedSkus = new Map<string, string>();
  for (const { index, item, fingerprint, traceparent } of round) {
    const key = identityKey(item.externalSystem, item.externalId);
    const existing = found.items.get(key);
    if (existing && existing.contentHash === item.contentHash) {
      const stored = returnsStored(how.mode) ? found.stored.get(key) : undefined;
      results.push({ index, status: 'unchanged', serviceId: existing.id, item, ...(stored ? { stored } : {}) });
      continue;
    }
    if (item.sku !== null) {
      const owner = found.skuOwners.get(item.sku) ?? claimedSkus.get(item.sku);
      if (owner !== undefined && owner !== key) {
        results.push({ index, status: 'error', externalId: item.externalId, error: skuConflict(item.sku, owner, how.pathPrefix?.(index)) });
        continue;
      }
      claimedSkus.set(item.sku, key);
    }
    if (how.mode.kind === 'dryRun') {
      results.push({ index, status: existing ? 'updated' : 'created', serviceId: existing?.id ?? newId(), item });
      continue;
    }
    candidates.push({ index, candidate: {
      id: existing?.id ?? newId(), item, ...(fingerprint === undefined ? {} : { fingerprint }), ...(existing?.hasMedia ? { hadMedia: true } : {}),
      ...(traceparent === undefined ? {} : { traceparent }),
      isNew: existing === undefined, source: how.sourceOf?.(index),
    } });
  }
  const writing = candidates.map((c) => c.candidate);
  const input = writing.length === 0 ? undefined : inputFor(writing, found);
  return { results, candidates, input };
}

/** What writeBatch's statement returns, whether a savepoint isolates it, and the batch record it carries. */
interface BatchWrite {
  readonly returnStored: boolean;
  /** In the caller's transaction, a savepoint around the write: its failure leaves the transaction usable. */
  readonly savepoint: boolean;
  readonly batchRecord?: BatchRecord | undefined;
}

/**
 * Writes a batch. Items that name no media, stored or sent, take one statement, atomic on its
 * own: no transaction. Otherwise the write first waits for the state changes of those media in
 * flight (lockNamedAssets), so the events and changelog records it writes carry their states as
 * committed, and registers the sent media after it: a transaction. Inside the caller's
 * transaction (an import batch) a savepoint keeps a failure from aborting the rest of it, unless
 * the write asks for none.
 */
async function writeBatch(
  db: Db,
  catalogId: string,
  candidates: Array<{ index: number; candidate: WriteCandidate }>,
  input: WriteInput,
  mediaRefreshAgeMs: number,
  { returnStored, savepoint: isolated, batchRecord }: BatchWrite,
): Promise<UpsertEntry[]> {
  const items = candidates.map((c) => c.candidate.item);
  const hasMedia = items.some((item) => item.media.length > 0);
  const namesMedia = hasMedia || candidates.some((c) => c.candidate.hadMedia);
  const write = async (tx: Db, savepoint: boolean): Promise<WrittenRow[]> => {
    if (savepoint) await query(tx, 'SAVEPOINT upsert_items');
    try {
      if (namesMedia) {
        await lockNamedAssets(tx, catalogId, items.flatMap((item) => item.media.map((m) => m.sourceUrlHash)),
          candidates.filter((c) => c.candidate.hadMedia).map((c) => [c.candidate.item.externalSystem, c.candidate.item.externalId] as const));
      }
      const rows = batchRecord ? await writeWithBatchRecord(tx, catalogId, input, batchRecord) : await writeItems(tx, catalogId, input, returnStored);
      // The stored rows' media states are right already: registering adds only pending assets.
      if (hasMedia) await registerMedia(tx, catalogId, rows, items, mediaRefreshAgeMs);
      if (savepoint) await query(tx, 'RELEASE SAVEPOINT upsert_items');
      return rows;
    } catch (error) {
      if (savepoint) await query(tx, 'ROLLBACK TO SAVEPOINT upsert_items');
      throw error;
    }
  };
  const written = db.isInTransaction() ? await write(db, isolated)
    : namesMedia ? await db.transactional((tx) => write(tx, false))
      : await write(db, false);
  const byIdentity = new Map(written.map((w) => [identityKey(w.external_system, w.external_id), w]));
  const results: UpsertEntry[] = [];
  for (const { index, candidate } of candidates) {
    const row = byIdentity.get(identityKey(candidate.item.externalSystem, candidate.item.externalId));
    const item = candidate.item;
    if (row) {
      results.push({ index, status: row.inserted ? 'created' : 'updated', serviceId: row.id, item, ...(returnStored ? { stored: row as StoredRow } : {}) });
      continue;
    }
    // Not returned: a concurrent request stored the same content first; nothing left to write.
    const key = identityKey(item.externalSystem, item.externalId);
    const again = await lookup(db, catalogId, [item]);
    const stored = returnStored ? again.stored.get(key) : undefined;
    results.push({ index, status: 'unchanged', serviceId: again.items.get(key)?.id ?? candidate.id, item, ...(stored ? { stored } : {}) });
  }
  return results;
}

async function writeWithBatchRecord(db: Db, catalogId: string, input: WriteInput, batchRecord: BatchRecord): Promise<WrittenRow[]> {
  const { rows, applied } = await writeItemsWithBatchRecord(db, catalogId, input, batchRecord);
  if (!applied) throw new BatchRecordRefused();
  return rows;
}

/** The write's input for `candidates`, with the names the lookup found and those to create. */
const inputFor = (candidates: readonly WriteCandidate[], found: Lookup) => writeInput(candidates, newNames(candidates.map((c) => c.item), found));

function newNames(items: readonly NormalizedItem[], found: Lookup) {
  const newCategories = new Map<string, NewName>();
  const newBrands = new Map<string, NewName>();
  for (const item of items) {
    for (const [named, known, fresh] of [[item.category, found.categories, newCategories], [item.brand, found.brands, newBrands]] as const) {
      if (!named) continue;
      const key = nameKey(named.name);
      if (!known.has(key) && !fresh.has(key)) fresh.set(key, { id: newId(), name: named.name, key });
    }
  }
  return { categories: found.categories, brands: found.brands, newCategories: [...newCategories.values()], newBrands: [...newBrands.values()] };
}

/** Names the item holding the SKU when the lookup found it, so the caller can fix one or the other. */
function skuConflict(sku: string, holder: string | undefined, prefix = ''): ProductError {
  let held = 'another item of this catalog';
  if (holder !== undefined) {
    const { externalSystem, externalId } = identityOf(holder);
    held = `the item with externalSystem ${JSON.stringify(externalSystem)} and externalId ${JSON.stringify(externalId)}`;
  }
  return conflict(`SKU ${JSON.stringify(sku)} is already used by ${held}.`, [{ path: `${prefix}sku`, message: 'must be unique within the catalog' }]);
}

const isDatabaseError = (error: unknown): boolean => databaseFailure(error) !== undefined;

function databaseError(error: unknown, item: NormalizedItem, prefix?: string): ProductError {
  return productErrorOf(error, {
    unique_violation: (constraint) => (constraint === 'items_catalog_sku_key' && item.sku !== null ? skuConflict(item.sku, undefined, prefix) : undefined),
  }) ?? new ProductError('error', 'The item could not be stored because of a database error; retrying later may succeed.');
}
