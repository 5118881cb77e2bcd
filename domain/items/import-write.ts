// What the item write offers an import batch: the upsert path's outcomes, with the batch's turn, without savepoints, and its record in the write.
import type { Db } from '../../platform/db/sql.ts';
import { identityKey } from './keys.ts';
import type { WriteRider } from './store.ts';
import { RecordRefused, WriteFailed } from './upsert-round.ts';
import { refreshAgeMs, writeRounds } from './upsert.ts';
import type { PreparedItems, UpsertEntry } from './upsert.ts';
import type { VersionSource } from './version-source.ts';

export { RecordRefused, WriteFailed };

/** How an import batch writes its items. */
export interface ImportBatchWrite {
  /** MEDIA_REFRESH_AGE_HOURS (config.media.refreshAgeHours). */
  readonly mediaRefreshAgeHours: number;
  /** Decide every outcome but write nothing: no item, category, brand or event (a dry run). */
  readonly dryRun: boolean;
  /**
   * Called with the SKU owners the lookup found (SKU → identity key) before anything is written:
   * resolves once writing may start, `true` when the lookup must be made again first because what
   * it found may have changed meanwhile (a batch written while the batch ahead of it commits).
   */
  readonly waitTurn: (skuOwners: ReadonlyMap<string, string>) => Promise<boolean>;
  /**
   * Inside the caller's transaction, isolate each item's database failure in a savepoint and
   * report it as that item's error entry. Without it the write takes no savepoint, two round
   * trips fewer, and a database error (rare in an import: a constraint, a concurrent writer)
   * throws WriteFailed: the caller's transaction is aborted; it rolls back and writes the batch
   * again with `isolateFailures`.
   */
  readonly isolateFailures?: boolean;
  /**
   * The batch's own record (its line errors, counters and cursor) to commit in the write's
   * statement, so the batch is one statement and sends no BEGIN or COMMIT. Called right before
   * the write with the outcomes the lookup decided and how many items the write sends; not
   * called when there is nothing to write. Only outside a transaction, for items that
   * writesInOneStatement accepts. When the record's gate refuses, nothing is written and
   * RecordRefused is thrown; a database error throws WriteFailed, nothing written either.
   */
  readonly record?: (decided: readonly UpsertEntry[], writing: number) => WriteRider;
  /** Where the line at `index` comes from (its job and line number), recorded with its item's version. */
  readonly sourceOf?: (index: number) => VersionSource;
}

/**
 * Upserts an import batch's prepared lines (items carrying their line fingerprints) through the
 * one upsert path: the same lookup, outcomes, write and events as an API request, and one entry
 * per line by position. See ImportBatchWrite for what the batch adds.
 */
export async function writeImportBatch(db: Db, catalogId: string, items: PreparedItems, write: ImportBatchWrite): Promise<UpsertEntry[]> {
  if (write.record && (db.isInTransaction() || !writesInOneStatement(items))) {
    throw new Error('a write that carries its record must be one round without media, outside a transaction');
  }
  return writeRounds(db, catalogId, items, {
    mediaRefreshAgeMs: refreshAgeMs(write.mediaRefreshAgeHours),
    dryRun: write.dryRun,
    unguarded: !write.isolateFailures,
    waitTurn: write.waitTurn,
    rider: write.record,
    sourceOf: write.sourceOf,
  });
}

/** True when the items write in one statement: one round (no identity twice) and no media to register. */
export function writesInOneStatement(items: PreparedItems): boolean {
  const identities = new Set<string>();
  for (const { item } of items.valid) {
    const identity = identityKey(item.externalSystem, item.externalId);
    if (item.media.length > 0 || identities.has(identity)) return false;
    identities.add(identity);
  }
  return true;
}
