// What the item write offers an import batch: the upsert path's outcomes, with the batch's turn, one entry point per way a batch is written.
import type { Db } from '../../platform/db/sql.ts';
import { identityKey } from './keys.ts';
import { BatchRecordRefused, WriteFailed } from './upsert-round.ts';
import type { BatchRecordOf, WriteMode } from './upsert-round.ts';
import { refreshAgeMs, writeRounds } from './upsert.ts';
import type { PreparedItems, UpsertEntry } from './upsert.ts';
import type { VersionSource } from './version-source.ts';

export { BatchRecordRefused, WriteFailed };
export type { BatchRecordOf };

/** What every import batch's write is given. */
export interface ImportBatchWrite {
  /** MEDIA_REFRESH_AGE_HOURS (config.media.refreshAgeHours). */
  readonly mediaRefreshAgeHours: number;
  /**
   * Called with the SKU owners the lookup found (SKU → identity key) before anything is written:
   * resolves once writing may start, `true` when the lookup must be made again first because what
   * it found may have changed meanwhile (a batch written while the batch ahead of it commits).
   */
  readonly waitTurn: (skuOwners: ReadonlyMap<string, string>) => Promise<boolean>;
  /** Where the line at `index` comes from (its job and line number), recorded with its item's version. */
  readonly sourceOf?: (index: number) => VersionSource;
}

/**
 * The batch in one statement with its batch record, so it sends no BEGIN or COMMIT: outside a
 * transaction, for items that writesInOneStatement accepts. When the record's gate refuses,
 * nothing is written and BatchRecordRefused is thrown; a database error throws WriteFailed,
 * nothing written either: the caller writes the batch again in a transaction.
 */
export function writeImportBatchWithRecord(
  db: Db, catalogId: string, items: PreparedItems, write: ImportBatchWrite & { readonly batchRecord: BatchRecordOf },
): Promise<UpsertEntry[]> {
  if (db.isInTransaction() || !writesInOneStatement(items)) {
    throw new Error('a write that carries its batch record must be one round without media, outside a transaction');
  }
  return writeBatch(db, catalogId, items, write, { kind: 'batchWithRecord', batchRecord: write.batchRecord });
}

/**
 * The batch in the caller's transaction without savepoints, two round trips fewer: a database
 * error (rare in an import: a constraint, a concurrent writer) throws WriteFailed and aborts the
 * transaction; the caller rolls back and writes the batch again with writeImportBatchIsolated.
 */
export function writeImportBatchOrAbort(tx: Db, catalogId: string, items: PreparedItems, write: ImportBatchWrite): Promise<UpsertEntry[]> {
  return writeBatch(inTransaction(tx), catalogId, items, write, { kind: 'inTransaction', onDatabaseError: 'abort' });
}

/** The batch in the caller's transaction, each item's database failure isolated in a savepoint and reported as its error entry. */
export function writeImportBatchIsolated(tx: Db, catalogId: string, items: PreparedItems, write: ImportBatchWrite): Promise<UpsertEntry[]> {
  return writeBatch(inTransaction(tx), catalogId, items, write, { kind: 'inTransaction', onDatabaseError: 'isolate' });
}

/** A dry run: every line's outcome decided as the write would, and nothing written (no item, category, brand or event). */
export function dryRunImportBatch(db: Db, catalogId: string, items: PreparedItems, write: Pick<ImportBatchWrite, 'waitTurn'>): Promise<UpsertEntry[]> {
  // Nothing is written, so no media is registered: the refresh age plays no part.
  return writeBatch(db, catalogId, items, { ...write, mediaRefreshAgeHours: 0 }, { kind: 'dryRun' });
}

/**
 * Upserts an import batch's prepared lines (items carrying their line fingerprints) through the
 * one upsert path: the same lookup, outcomes, write and events as an API request, and one entry
 * per line by position.
 */
function writeBatch(db: Db, catalogId: string, items: PreparedItems, write: ImportBatchWrite, mode: WriteMode): Promise<UpsertEntry[]> {
  return writeRounds(db, catalogId, items, {
    mode, mediaRefreshAgeMs: refreshAgeMs(write.mediaRefreshAgeHours), waitTurn: write.waitTurn, sourceOf: write.sourceOf,
  });
}

function inTransaction(db: Db): Db {
  if (!db.isInTransaction()) throw new Error('this import batch write runs in the caller\'s transaction');
  return db;
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
