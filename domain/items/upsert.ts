// The one upsert path: single upserts, bulk upserts and import lines all come through here.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';
import { ProductError, conflict, validationError } from '../../platform/errors.ts';
import type { ErrorDetail } from '../../platform/errors.ts';
import { registerMedia } from '../media/register.ts';
import { normalizeItem } from './payload.ts';
import type { NormalizeResult, NormalizedItem } from './payload.ts';
import { identityKey, lookup, nameKey, writeInput, writeItems, writeItemsWithRider } from './store.ts';
import type { Lookup, NewName, StoredRow, WriteCandidate, WriteInput, WriteRider, WrittenRow } from './store.ts';
import type { ItemRow } from './view.ts';

export type UpsertOutcome = 'created' | 'updated' | 'unchanged';

export type UpsertEntry =
  | { index: number; status: UpsertOutcome; serviceId: string; item: NormalizedItem; stored?: ItemRow }
  | { index: number; status: 'error'; externalId: string | null; error: ProductError };

export interface UpsertOptions {
  /** Prefix of validation paths for the element at `index`, e.g. `items.3.` in a bulk body. */
  pathPrefix?: (index: number) => string;
  /** Decide every outcome but write nothing: no item, category, brand or event (import dry runs). */
  dryRun?: boolean;
  /**
   * The caller answers with the stored item (the single upsert): entries carry `stored`, taken
   * from the lookup when unchanged and returned by the write otherwise, so nothing is read back.
   */
  returnStored?: boolean;
  /**
   * Inside the caller's transaction, write without a savepoint around each write, two round trips
   * fewer. A database error then aborts the caller's transaction and throws UnguardedWriteFailed:
   * the caller rolls back and upserts again without this option, so each item's failure is
   * isolated as usual (import batches, where a failing write is rare).
   */
  unguarded?: boolean;
  /**
   * Called with what the lookup found, before anything is written: resolves once writing may
   * start, `true` when the lookup must be made again first because what it found may have
   * changed meanwhile (an import batch written while the batch ahead of it commits).
   */
  beforeWrite?: (found: Lookup) => Promise<boolean>;
  /**
   * Something to commit with the write, in its statement (an import batch's line errors, counters
   * and cursor). Called right before the write, with the outcomes the lookup decided (unchanged,
   * conflicts) and how many items the write sends; not called when there is nothing to write.
   * Only outside a transaction, for inputs of one round (no identity twice) without media, whose
   * write is then one statement, atomic with the rider: when the rider's gate refuses, nothing is
   * written and RiderRefused is thrown; a database error throws UnguardedWriteFailed, nothing
   * written either.
   */
  rider?: (decided: readonly UpsertEntry[], writing: number) => WriteRider;
}

/** The rider's gate refused (UpsertOptions.rider): the write wrote nothing. */
export class RiderRefused extends Error {
  constructor() {
    super('the write\'s rider did not apply; nothing was written');
  }
}

/** A write failed under `unguarded` (or with a rider): the caller's transaction is aborted (the rider's statement wrote nothing) and must be retried without it. */
export class UnguardedWriteFailed extends Error {
  constructor(cause: unknown) {
    super('a write without a savepoint failed; roll back and retry with savepoints', { cause });
  }
}

const UNIQUE_VIOLATION = '23505';

/** A valid input, normalized. */
export interface ValidInput {
  readonly index: number;
  readonly item: NormalizedItem;
  /** The import line's fingerprint (domain/imports/fingerprint.ts), stored with the item when written. */
  readonly fingerprint?: string;
}

/** Inputs validated and normalized, ready for the database: no I/O went into them. */
export interface PreparedItems {
  /** The failed inputs' entries at their index; upsertPrepared fills in the others. */
  readonly entries: UpsertEntry[];
  readonly valid: ValidInput[];
}

/** Adds an input's validation and normalization (with the content hash), the CPU half of its upsert. */
export function addNormalized(into: PreparedItems, normalized: NormalizeResult, index: number, fingerprint?: string): void {
  if (normalized.ok) into.valid.push(fingerprint === undefined ? { index, item: normalized.item } : { index, item: normalized.item, fingerprint });
  else into.entries[index] = { index, status: 'error', externalId: normalized.externalId ?? null, error: invalid(normalized.details) };
}

function prepareItems(inputs: readonly unknown[], options: Pick<UpsertOptions, 'pathPrefix'> = {}): PreparedItems {
  const prepared: PreparedItems = { entries: new Array(inputs.length), valid: [] };
  inputs.forEach((input, index) => addNormalized(prepared, normalizeItem(input, options.pathPrefix?.(index) ?? ''), index));
  return prepared;
}

/**
 * Upserts `inputs` in order, each judged on its own: a bad element becomes an `error` entry
 * and never affects the others. Runs inside the caller's transaction when `em` is in one
 * (imports commit their counters with the batch); otherwise each batch's write is one atomic
 * statement.
 */
export async function upsertItems(em: EntityManager, catalogId: string, inputs: readonly unknown[], options: UpsertOptions = {}): Promise<UpsertEntry[]> {
  return upsertPrepared(em, catalogId, prepareItems(inputs, options), options);
}

/** The database half of upsertItems, for a caller that prepared the inputs ahead (imports). */
export async function upsertPrepared(em: EntityManager, catalogId: string, prepared: PreparedItems, options: UpsertOptions = {}): Promise<UpsertEntry[]> {
  const entries = [...prepared.entries];
  // The same identity twice in one body: its second occurrence goes to a later round, so the
  // occurrences apply in order and one statement never touches a row twice.
  const allRounds = rounds(prepared.valid);
  if (options.rider && (allRounds.length > 1 || em.isInTransaction() || prepared.valid.some((v) => v.item.media.length > 0))) {
    throw new Error('a write with a rider must be one round without media, outside a transaction');
  }
  for (const round of allRounds) {
    for (const entry of await upsertRound(em, catalogId, round, options)) entries[entry.index] = entry;
  }
  return entries;
}

function rounds(valid: readonly ValidInput[]): ValidInput[][] {
  const result: ValidInput[][] = [];
  const seen = new Map<string, number>();
  for (const entry of valid) {
    const key = identityKey(entry.item.externalSystem, entry.item.externalId);
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    (result[round] ??= []).push(entry);
  }
  return result;
}

async function upsertRound(
  em: EntityManager,
  catalogId: string,
  round: readonly ValidInput[],
  options: UpsertOptions,
): Promise<UpsertEntry[]> {
  const items = round.map((r) => r.item);
  let found = await lookup(em, catalogId, items, options.returnStored);
  let { results, candidates, input } = decide(round, found, options);
  while (await options.beforeWrite?.(found)) {
    found = await lookup(em, catalogId, items, options.returnStored);
    ({ results, candidates, input } = decide(round, found, options));
  }
  if (input === undefined) return results;
  try {
    results.push(...await writeBatch(em, catalogId, candidates, input, options, options.rider?.(results, candidates.length)));
  } catch (error) {
    if (!isDatabaseError(error)) throw error;
    if ((options.unguarded && em.isInTransaction()) || options.rider) throw new UnguardedWriteFailed(error);
    // A concurrent writer took a SKU between lookup and write, or a row broke a constraint:
    // find the culprit by writing one item at a time, each in its own savepoint.
    for (const one of candidates) {
      try {
        const alone = await lookup(em, catalogId, [one.candidate.item]);
        results.push(...await writeBatch(em, catalogId, [one], inputFor([one.candidate], alone)));
      } catch (itemError) {
        if (!isDatabaseError(itemError)) throw itemError;
        const prefix = options.pathPrefix?.(one.index);
        results.push({ index: one.index, status: 'error', externalId: one.candidate.item.externalId, error: databaseError(itemError, one.candidate.item, prefix) });
      }
    }
  }
  return results;
}

/**
 * Each item's outcome as far as the lookup decides it (unchanged, a SKU conflict, or created and
 * updated in a dry run) and the write of the others, built ahead: UpsertOptions.beforeWrite may
 * then keep it waiting for its turn without the build adding to the wait.
 */
function decide(round: readonly ValidInput[], found: Lookup, options: UpsertOptions) {
  const results: UpsertEntry[] = [];
  const candidates: Array<{ index: number; candidate: WriteCandidate }> = [];
  const claimedSkus = new Map<string, string>();
  for (const { index, item, fingerprint } of round) {
    const key = identityKey(item.externalSystem, item.externalId);
    const existing = found.items.get(key);
    if (existing && existing.contentHash === item.contentHash) {
      const stored = options.returnStored ? found.stored.get(key) : undefined;
      results.push({ index, status: 'unchanged', serviceId: existing.id, item, ...(stored ? { stored } : {}) });
      continue;
    }
    if (item.sku !== null) {
      const owner = found.skuOwners.get(item.sku) ?? claimedSkus.get(item.sku);
      if (owner !== undefined && owner !== key) {
        results.push({ index, status: 'error', externalId: item.externalId, error: skuConflict(item.sku, options.pathPrefix?.(index)) });
        continue;
      }
      claimedSkus.set(item.sku, key);
    }
    if (options.dryRun) {
      results.push({ index, status: existing ? 'updated' : 'created', serviceId: existing?.id ?? newId(), item });
      continue;
    }
    candidates.push({ index, candidate: { id: existing?.id ?? newId(), item, ...(fingerprint === undefined ? {} : { fingerprint }) } });
  }
  const writing = candidates.map((c) => c.candidate);
  const input = writing.length === 0 ? undefined : inputFor(writing, found);
  return { results, candidates, input };
}

/**
 * Writes a batch. Items without media take one statement, atomic on its own: no transaction.
 * Media registration is a second statement that must commit with the items, so a batch with
 * media runs in a transaction. Inside the caller's transaction (an import batch) a savepoint
 * keeps a failure from aborting the rest of it, unless the caller asked for `unguarded`.
 */
async function writeBatch(
  em: EntityManager,
  catalogId: string,
  candidates: Array<{ index: number; candidate: WriteCandidate }>,
  input: WriteInput,
  { returnStored = false, unguarded = false }: Pick<UpsertOptions, 'returnStored' | 'unguarded'> = {},
  rider?: WriteRider,
): Promise<UpsertEntry[]> {
  const items = candidates.map((c) => c.candidate.item);
  const hasMedia = items.some((item) => item.media.length > 0);
  const write = async (tx: EntityManager, savepoint: boolean): Promise<WrittenRow[]> => {
    if (savepoint) await query(tx, 'SAVEPOINT upsert_items');
    try {
      const rows = rider ? await writeRidden(tx, catalogId, input, rider) : await writeItems(tx, catalogId, input, returnStored);
      // The stored rows' media states are right already: registering adds only pending assets.
      if (hasMedia) await registerMedia((sql, params) => tx.execute(sql, params), catalogId, rows, items);
      if (savepoint) await query(tx, 'RELEASE SAVEPOINT upsert_items');
      return rows;
    } catch (error) {
      if (savepoint) await query(tx, 'ROLLBACK TO SAVEPOINT upsert_items');
      throw error;
    }
  };
  const written = em.isInTransaction() ? await write(em, !unguarded)
    : hasMedia ? await em.transactional((tx) => write(tx, false))
      : await write(em, false);
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
    const again = await lookup(em, catalogId, [item]);
    const stored = returnStored ? again.stored.get(key) : undefined;
    results.push({ index, status: 'unchanged', serviceId: again.items.get(key)?.id ?? candidate.id, item, ...(stored ? { stored } : {}) });
  }
  return results;
}

async function writeRidden(em: EntityManager, catalogId: string, input: WriteInput, rider: WriteRider): Promise<WrittenRow[]> {
  const { rows, applied } = await writeItemsWithRider(em, catalogId, input, rider);
  if (!applied) throw new RiderRefused();
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

const skuConflict = (sku: string, prefix = '') =>
  conflict(`SKU "${sku}" is already used by another item of this catalog.`, [{ path: `${prefix}sku`, message: 'must be unique within the catalog' }]);

/** The message names each problem, so a bulk result's `error` string is useful on its own. */
const invalid = (details: ErrorDetail[]) =>
  validationError(details, `Invalid item: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}.`);

function isDatabaseError(error: unknown): boolean {
  return typeof (error as { code?: unknown })?.code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code);
}

function databaseError(error: unknown, item: NormalizedItem, prefix?: string): ProductError {
  const { code, constraint } = error as { code: string; constraint?: string };
  if (code === UNIQUE_VIOLATION && constraint === 'items_catalog_sku_key' && item.sku !== null) return skuConflict(item.sku, prefix);
  return new ProductError('error', 'The item could not be stored because of a database error; retrying later may succeed.');
}
