// The commit of an import batch: its lines through the item write, with their line errors, counters and resume cursor, atomically.
import type { Db } from '../../platform/db/sql.ts';
import type { Logger } from '../../platform/log/logger.ts';
import {
  BatchRecordRefused, WriteFailed, dryRunImportBatch, writeImportBatchIsolated, writeImportBatchOrAbort, writeImportBatchWithRecord,
  writesInOneStatement,
} from '../items/import-write.ts';
import { itemsByFingerprint } from '../items/store.ts';
import type { FingerprintedItem } from '../items/store.ts';
import { importSource } from '../items/version-source.ts';
import type { UpsertEntry } from '../items/upsert.ts';
import { BATCH_LINES, linesToUpsert, outcomeOf, partOf, positionsIn } from './batch-pipeline.ts';
import type { BatchTurn, LinesToUpsert, PreparedBatch } from './batch-pipeline.ts';
import { batchRecordForWrite, recordBatch, recordKnownRun } from './batch-record.ts';
import type { BatchPlace } from './batch-record.ts';
import type { BatchCounts } from './job-store.ts';
import { dryRunChanges, lineResults } from './line-results.ts';
import type { BatchResults } from './line-results.ts';
import type { FileLine } from './line-reader.ts';
import type { LineError } from './lines.ts';

/** The run stops: the job was cancelled, or another processor moved its cursor (this one lost its lock). */
export class JobStopped extends Error {}

/** What a run's batches commit against. */
export interface BatchJob {
  /** A fresh entity manager, for a statement or a transaction of its own. */
  readonly db: () => Db;
  readonly jobId: string;
  readonly catalogId: string;
  readonly dryRun: boolean;
  readonly mediaRefreshAgeHours: number;
  readonly logger: Logger;
  /** The resume line this run last recorded; moves on as its batches commit. */
  readonly cursor: { line: number; offset: number };
  /** Called with each batch's counts once it committed. */
  readonly onCommitted?: (counts: BatchCounts) => void;
}

/** A batch ending with `last` committed with `counts`: the cursor moves on. */
function committed(job: BatchJob, last: FileLine, counts: BatchCounts): void {
  job.cursor.line = last.lineNumber;
  job.cursor.offset = last.endOffset;
  job.onCommitted?.(counts);
}

const placeOf = (job: BatchJob, last: FileLine): BatchPlace =>
  ({ jobId: job.jobId, fromLine: job.cursor.line, fromOffset: job.cursor.offset, lastLine: last.lineNumber, endOffset: last.endOffset });

/**
 * Commits lines read, at most BATCH_LINES to a transaction: the lines' upserts, their line
 * errors, the counters and the resume cursor. The counters apply only while the job is still
 * processing and its cursor is where this run left it; otherwise the transaction rolls back
 * and the run stops (JobStopped). Lines already stored write nothing but counters: a run of
 * them (up to KNOWN_RUN_LINES) is recorded by one statement, which is its transaction.
 * `knownLines` are the lines found stored already (itemsByFingerprint) before any of these was
 * committed; they hold until a transaction writes items, and the parts after it are looked up
 * again. Returns how many lines proved unchanged, by their fingerprint or by the upsert.
 */
export async function commitBatch(job: BatchJob, batch: PreparedBatch, knownLines: Promise<ReadonlyMap<number, FingerprintedItem>>, turn: BatchTurn): Promise<number> {
  // Looked up outside any transaction (read committed, it would see no more inside one), once
  // no earlier batch could still change an item.
  let known: ReadonlyMap<number, FingerprintedItem> | undefined = await knownLines;
  let unchanged = 0;
  // The lines proved stored and not recorded yet: how many, and the last of them.
  let knownRun = { ids: [] as string[], last: undefined as FileLine | undefined };
  for (let start = 0; start < batch.lines.length; start += BATCH_LINES) {
    const part = partOf(batch, start);
    const partKnown = known === undefined ? await itemsByFingerprint(job.db(), job.catalogId, part.fingerprints)
      : part === batch ? known : positionsIn(known, start, part.lines.length);
    if (partKnown.size === part.lines.length) {
      unchanged += part.lines.length;
      knownRun = { ids: [...knownRun.ids, ...[...partKnown.keys()].sort((a, b) => a - b).map((i) => partKnown.get(i)!.id)], last: part.lines.at(-1) };
      continue;
    }
    if (knownRun.last) await recordKnown(job, knownRun.ids, knownRun.last);
    knownRun = { ids: [], last: undefined };
    unchanged += await commitLines(job, part, partKnown, turn);
    known = undefined;
  }
  if (knownRun.last) await recordKnown(job, knownRun.ids, knownRun.last);
  return unchanged;
}

/**
 * Lines all proved stored, ending with `last`, whose items have `ids` (in line order): their
 * counters, cursor and results, one statement. Their results are kept as the run's place in the
 * file and the ids, read back from the file when the results are read (a re-import writes no
 * more than that).
 */
async function recordKnown(job: BatchJob, ids: readonly string[], last: FileLine): Promise<void> {
  const counts = { processed: ids.length, succeeded: 0, failed: 0, unchanged: ids.length, created: 0, updated: 0 };
  if (!(await recordKnownRun(job.db(), placeOf(job, last), counts, ids, job.dryRun))) throw new JobStopped();
  committed(job, last, counts);
}

/** The batch's record in `db`'s transaction; JobStopped, rolling the batch back, when the gate refuses. */
async function record(db: Db, job: BatchJob, last: FileLine, counts: BatchCounts, errors: readonly LineError[], results: BatchResults): Promise<void> {
  if (!(await recordBatch(db, placeOf(job, last), counts, errors, results, job.dryRun))) throw new JobStopped();
}

/**
 * One transaction: the lines that are not all stored already, through the item write. Written
 * as one statement with its batch record when the items allow it, otherwise without savepoints;
 * should a write fail in the database (rare: a constraint, a concurrent writer), it rolls back
 * and the lines go through again in a transaction, each item's write isolated. Returns how many
 * lines proved unchanged.
 */
async function commitLines(job: BatchJob, part: PreparedBatch, known: ReadonlyMap<number, FingerprintedItem>, turn: BatchTurn): Promise<number> {
  try {
    return await commitLinesOnce(job, part, known, turn, 'abort');
  } catch (error) {
    if (!(error instanceof WriteFailed)) throw error;
    job.logger.debug({ jobId: job.jobId, err: error.cause }, 'import batch rolled back after a database error; writing it item by item');
    return commitLinesOnce(job, part, known, turn, 'isolate');
  }
}

/** The lines once: `abort` on the fast paths (one statement, or no savepoints), `isolate` after one of them failed. */
async function commitLinesOnce(
  job: BatchJob, part: PreparedBatch, known: ReadonlyMap<number, FingerprintedItem>, turn: BatchTurn, onDatabaseError: 'isolate' | 'abort',
): Promise<number> {
  const lines = linesToUpsert(part, known);
  if (onDatabaseError === 'abort' && !job.dryRun && writesInOneStatement(lines.items)) return commitInOneStatement(job, part, lines, turn);
  const last = part.lines.at(-1)!;
  const write = { mediaRefreshAgeHours: job.mediaRefreshAgeHours, waitTurn: turn.beforeWrite, sourceOf: lineSources(job, lines) };
  const writeIn = job.dryRun ? dryRunImportBatch : onDatabaseError === 'isolate' ? writeImportBatchIsolated : writeImportBatchOrAbort;
  const counts = await job.db().transactional(async (tx) => {
    const entries = lines.valueLines.length > 0 ? await writeIn(tx, job.catalogId, lines.items, write) : [];
    turn.wrote();
    const outcome = outcomeOf(part, lines, entries);
    const changes = job.dryRun ? await dryRunChanges(tx, job.catalogId, entries) : undefined;
    await turn.aheadCommitted;
    await record(tx, job, last, outcome.counts, outcome.batchErrors, lineResults(lines, entries, changes ? { changes } : {}));
    return outcome.counts;
  });
  committed(job, last, counts);
  return counts.unchanged;
}

/**
 * The batch as one statement, which is its transaction: the items' write carries the batch's
 * line errors, counters and cursor (batchRecordForWrite), so the batch sends no BEGIN, COMMIT or
 * counters statement of its own. The record's gate is recordBatch's condition: when the job was
 * cancelled meanwhile or another processor moved the cursor, the statement writes nothing. A
 * batch that writes no item records its counters alone, one statement too.
 */
async function commitInOneStatement(job: BatchJob, part: PreparedBatch, lines: LinesToUpsert, turn: BatchTurn): Promise<number> {
  const last = part.lines.at(-1)!;
  const db = job.db();
  let recorded = false;
  const batchRecord = (decided: readonly UpsertEntry[], writing: number) => {
    recorded = true;
    const entries = [...lines.items.entries.filter((entry) => entry !== undefined), ...decided];
    const known = outcomeOf(part, lines, entries);
    const byIndex: UpsertEntry[] = [];
    for (const entry of entries) byIndex[entry.index] = entry;
    return batchRecordForWrite(placeOf(job, last), known.counts, known.batchErrors, lineResults(lines, byIndex, { inWrite: true }), writing);
  };
  let entries: UpsertEntry[] = [];
  try {
    if (lines.valueLines.length > 0) {
      entries = await writeImportBatchWithRecord(db, job.catalogId, lines.items, {
        mediaRefreshAgeHours: job.mediaRefreshAgeHours, waitTurn: turn.beforeRecordedWrite, batchRecord, sourceOf: lineSources(job, lines),
      });
    }
  } catch (error) {
    throw error instanceof BatchRecordRefused ? new JobStopped() : error;
  }
  turn.wrote();
  const { counts, batchErrors } = outcomeOf(part, lines, entries);
  if (!recorded) {
    await turn.aheadCommitted;
    await record(db, job, last, counts, batchErrors, lineResults(lines, entries));
  }
  committed(job, last, counts);
  return counts.unchanged;
}

/** Each upserted line's source for its item's version: the job and the line's number in the file. */
const lineSources = (job: BatchJob, lines: LinesToUpsert) => (index: number) => importSource(job.jobId, lines.valueLines[index]!.lineNumber);
