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
import { lookup, writeInput, writeItems, writeItemsWithRider } from './store.ts';
import type { Lookup, NewName, StoredRow, WriteCandidate, WriteInput, WriteRider, WrittenRow } from './store.ts';
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
 * How a round is written. Requests give the refresh age and, for the single upsert,
 * `returnStored`; the rest is for import batches (writeImportBatch, import-write.ts).
 */
export interface RoundWrite {
  /** MEDIA_REFRESH_AGE_HOURS in ms, for the media registration of written items. */
  readonly mediaRefreshAgeMs: number;
  readonly pathPrefix?: ((index: number) => string) | undefined;
  /** Entries carry `stored`: taken from the lookup when unchanged, returned by the write otherwise. */
  readonly returnStored?: boolean;
  /** Decide every outcome but write nothing: no item, category, brand or event. */
  readonly dryRun?: boolean;
  /** In the caller's transaction, no savepoint around the write: a database error throws WriteFailed. */
  readonly unguarded?: boolean;
  /** Resolves once writing may start; true to look up again first. */
  readonly waitTurn?: ((skuOwners: ReadonlyMap<string, string>) => Promise<boolean>) | undefined;
  /** Where the input at `index` comes from, recorded with its version. */
  readonly sourceOf?: ((index: number) => VersionSource) | undefined;
  /** A record to commit in the write's statement (outside a transaction, one round without media). */
  readonly rider?: ((decided: readonly UpsertEntry[], writing: number) => WriteRider) | undefined;
}

/** The rider's gate refused: the write wrote nothing. */
export class RecordRefused extends Error {
  constructor() {
    super('the record riding on the write did not apply; nothing was written');
  }
}

/** A write without a savepoint (or with a rider) failed in the database: nothing of it stays, and the caller's transaction is aborted. */
export class WriteFailed extends Error {
  constructor(cause: unknown) {
    super('a write without a savepoint failed; roll back and write again with savepoints', { cause });
  }
}

export async function upsertRound(db: Db, catalogId: string, round: readonly ValidInput[], how: RoundWrite): Promise<UpsertEntry[]> {
  const items = round.map((r) => r.item);
  let found = await lookup(db, catalogId, items, how.returnStored);
  let { results, candidates, input } = decide(round, found, how);
  while (await how.waitTurn?.(found.skuOwners)) {
    found = await lookup(db, catalogId, items, how.returnStored);
    ({ results, candidates, input } = decide(round, found, how));
  }
  if (input === undefined) return results;
  // The one-statement write cannot wait for asset state changes first: the caller writes again in a transaction.
  if (how.rider && candidates.some((c) => c.candidate.hadMedia)) throw new WriteFailed(new Error('a stored item names media'));
  try {
    results.push(...await writeBatch(db, catalogId, candidates, input, how, how.rider?.(results, candidates.length)));
  } catch (error) {
    if (!isDatabaseError(error)) throw error;
    if ((how.unguarded && db.isInTransaction()) || how.rider) throw new WriteFailed(error);
    // A concurrent writer took a SKU between lookup and write, or a row broke a constraint:
    // find the culprit by writing one item at a time, each in its own savepoint.
    for (const one of candidates) {
      try {
        const alone = await lookup(db, catalogId, [one.candidate.item]);
        const again = { ...one.candidate, isNew: !alone.items.has(identityKey(one.candidate.item.externalSystem, one.candidate.item.externalId)) };
        results.push(...await writeBatch(db, catalogId, [one], inputFor([again], alone), { ...how, returnStored: false, unguarded: false }));
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
      const stored = how.returnStored ? found.stored.get(key) : undefined;
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
    if (how.dryRun) {
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

/**
 * Writes a batch. Items that name no media, stored or sent, take one statement, atomic on its
 * own: no transaction. Otherwise the write first waits for the state changes of those media in
 * flight (lockNamedAssets), so the events and changelog records it writes carry their states as
 * committed, and registers the sent media after it: a transaction. Inside the caller's
 * transaction (an import batch) a savepoint keeps a failure from aborting the rest of it, unless
 * the caller asked for `unguarded`.
 */
async function writeBatch(
  db: Db,
  catalogId: string,
  candidates: Array<{ index: number; candidate: WriteCandidate }>,
  input: WriteInput,
  how: RoundWrite,
  rider?: WriteRider,
): Promise<UpsertEntry[]> {
  const returnStored = how.returnStored ?? false;
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
      const rows = rider ? await writeRidden(tx, catalogId, input, rider) : await writeItems(tx, catalogId, input, returnStored);
      // The stored rows' media states are right already: registering adds only pending assets.
      if (hasMedia) await registerMedia(tx, catalogId, rows, items, how.mediaRefreshAgeMs);
      if (savepoint) await query(tx, 'RELEASE SAVEPOINT upsert_items');
      return rows;
    } catch (error) {
      if (savepoint) await query(tx, 'ROLLBACK TO SAVEPOINT upsert_items');
      throw error;
    }
  };
  const written = db.isInTransaction() ? await write(db, !how.unguarded)
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

async function writeRidden(db: Db, catalogId: string, input: WriteInput, rider: WriteRider): Promise<WrittenRow[]> {
  const { rows, applied } = await writeItemsWithRider(db, catalogId, input, rider);
  if (!applied) throw new RecordRefused();
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
