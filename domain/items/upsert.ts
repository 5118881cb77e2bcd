// The one upsert path: single upserts, bulk upserts and import lines all come through here; the requests' entry points.
import type { Db } from '../../platform/db/sql.ts';
import { validationError } from '../../platform/errors.ts';
import type { ErrorDetail } from '../../platform/errors.ts';
import { identityKey } from './keys.ts';
import { normalizeItem } from './payload.ts';
import type { NormalizeResult } from './normalized-item.ts';
import { upsertRound } from './upsert-round.ts';
import type { VersionSource } from './version-source.ts';
import type { RoundWrite, UpsertEntry, ValidInput } from './upsert-round.ts';

export type { UpsertEntry, UpsertOutcome, ValidInput } from './upsert-round.ts';

export interface UpsertOptions {
  /** MEDIA_REFRESH_AGE_HOURS (config.media.refreshAgeHours): a known image older than this is fetched again. */
  readonly mediaRefreshAgeHours: number;
  /** Prefix of validation paths for the element at `index`, e.g. `items.3.` in a bulk body. */
  readonly pathPrefix?: (index: number) => string;
  /**
   * The caller answers with the stored items (single upserts, upsertOne): entries carry `stored`,
   * taken from the lookup when unchanged and returned by the write otherwise, so nothing is read back.
   */
  readonly returnStored?: boolean;
  /** Where the input at `index` comes from, recorded with its version. */
  readonly sourceOf?: (index: number) => VersionSource;
}

/** Inputs validated and normalized, ready for the database: no I/O went into them. */
export interface PreparedItems {
  /** The failed inputs' entries at their index; the write fills in the others. */
  readonly entries: UpsertEntry[];
  readonly valid: ValidInput[];
}

/** Adds an input's validation and normalization (with the content hash), the CPU half of its upsert. */
export function addNormalized(into: PreparedItems, normalized: NormalizeResult, index: number, fingerprint?: string): void {
  if (normalized.ok) into.valid.push(fingerprint === undefined ? { index, item: normalized.item } : { index, item: normalized.item, fingerprint });
  else into.entries[index] = { index, status: 'error', externalId: normalized.externalId ?? null, error: invalid(normalized.details) };
}

function prepareItems(inputs: readonly unknown[], pathPrefix?: (index: number) => string): PreparedItems {
  const prepared: PreparedItems = { entries: new Array(inputs.length), valid: [] };
  inputs.forEach((input, index) => addNormalized(prepared, normalizeItem(input, pathPrefix?.(index) ?? ''), index));
  return prepared;
}

/**
 * A bulk request: upserts `inputs` in order, each judged on its own: a bad element becomes an
 * `error` entry and never affects the others. Runs inside the caller's transaction when `db` is
 * in one; otherwise each batch's write is one atomic statement.
 */
export async function upsertItems(db: Db, catalogId: string, inputs: readonly unknown[], options: UpsertOptions): Promise<UpsertEntry[]> {
  return upsertPrepared(db, catalogId, prepareItems(inputs, options.pathPrefix), options);
}

/** The database half of upsertItems, for a caller that prepared the inputs ahead (a group of single upserts). */
export async function upsertPrepared(db: Db, catalogId: string, prepared: PreparedItems, options: UpsertOptions): Promise<UpsertEntry[]> {
  return writeRounds(db, catalogId, prepared, {
    mode: { kind: 'request', returnStored: options.returnStored ?? false },
    mediaRefreshAgeMs: refreshAgeMs(options.mediaRefreshAgeHours),
    pathPrefix: options.pathPrefix,
    sourceOf: options.sourceOf,
  });
}

export const refreshAgeMs = (hours: number) => hours * 3_600_000;

/**
 * Writes the valid inputs round by round and returns every entry by index. The same identity
 * twice in one body: its second occurrence goes to a later round, so the occurrences apply in
 * order and one statement never touches a row twice.
 */
export async function writeRounds(db: Db, catalogId: string, prepared: PreparedItems, how: RoundWrite): Promise<UpsertEntry[]> {
  const entries = [...prepared.entries];
  for (const round of rounds(prepared.valid)) {
    for (const entry of await upsertRound(db, catalogId, round, how)) entries[entry.index] = entry;
  }
  return entries;
}

/** The valid inputs in rounds: each round holds an identity at most once, in input order. */
export function rounds(valid: readonly ValidInput[]): ValidInput[][] {
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

/** The message names each problem, so a bulk result's `error` string is useful on its own. */
const invalid = (details: ErrorDetail[]) =>
  validationError(details, `Invalid item: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}.`);
