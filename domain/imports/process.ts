// An import job's lifecycle: its processing lock, queued → processing after the counting pass, the resumable run of its batches, and its end.
import { inSpan } from '../../platform/tracing.ts';
import { openSession } from '../../platform/db/connections.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import type { Orm } from '../../platform/db/orm.ts';
import type { Logger } from '../../platform/log/logger.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import { itemsByFingerprint } from '../items/store.ts';
import type { FingerprintedItem } from '../items/store.ts';
import { JobStopped, commitBatch } from './batch-commit.ts';
import type { BatchJob } from './batch-commit.ts';
import { BATCH_LINES, KNOWN_RUN_LINES, batchTurn, keysOf, prepareBatch, sharesKeys } from './batch-pipeline.ts';
import type { BatchAhead, PreparedBatch } from './batch-pipeline.ts';
import { finishJob, loadJob, markProcessing, tryLockJob } from './job-store.ts';
import type { BatchCounts, JobRow } from './job-store.ts';
import { MAX_FILE_BYTES } from './jobs.ts';
import { readLines, scanFile } from './line-reader.ts';
import { fetchSource } from './source.ts';
import type { SourceOptions } from './source.ts';
import { finishUnchanged, recordFetched } from './source-store.ts';
import type { FileLine } from './line-reader.ts';

export interface ProcessDeps {
  readonly orm: Orm;
  readonly storage: ObjectStorage;
  /** Opens a job's full source address and its headers, sealed at rest. */
  readonly secrets: SecretBox;
  /** For the job's processing lock, a session of its own. */
  readonly databaseUrl: string;
  readonly logger: Logger;
  /** MEDIA_REFRESH_AGE_HOURS, for the media of the items the job writes. */
  readonly mediaRefreshAgeHours: number;
  /** Called with each batch's counts once it committed (metrics). */
  readonly onCommitted?: (counts: BatchCounts) => void;
  /** True once the process is shutting down: stop after the current batch (the cursor is committed). */
  readonly stopping?: () => boolean;
  /** How jobs with a source address fetch their file. */
  readonly source: SourceOptions;
}

export type ProcessOutcome = 'finished' | 'stopped' | 'busy' | 'skipped';

/**
 * Runs a queued or processing job to its end. A session-level advisory lock on a connection of
 * its own makes one process at a time work on a job; the lock dies with a killed process, so
 * another one resumes from the cursor committed with the last batch. Should the lock's
 * connection be lost, the cursor check of each batch keeps a second processor from
 * double-counting.
 */
export async function processImport(deps: ProcessDeps, jobId: string): Promise<ProcessOutcome> {
  const session = await openSession(deps.databaseUrl, deps.logger, `import lock ${jobId}`);
  try {
    if (!(await tryLockJob(session, jobId))) return 'busy';
    let job = await loadJob(deps.orm.em.fork(), jobId);
    if (job?.status === 'queued') job = await begin(deps, job);
    if (job?.status !== 'processing') return 'skipped';
    // Which process ran a job, for operators of a fleet.
    deps.logger.info({ jobId }, 'import running in this process');
    return await run(deps, job);
  } finally {
    // Ending the session releases the lock.
    await session.close();
  }
}

/** Ends a job that could not be processed at all, unless it was cancelled meanwhile. */
async function fail(deps: ProcessDeps, jobId: string, reason: string): Promise<undefined> {
  await deps.orm.em.fork().transactional(async (tx) => {
    const job = await loadJob(tx, jobId, { lock: true });
    if (job && (job.status === 'queued' || job.status === 'processing')) await finishJob(tx, job, 'failed', reason);
  });
  deps.logger.info({ jobId, reason }, 'import failed');
  return undefined;
}

/** A job with a source address: its file fetched into storage, or the job ended (failed, or unchanged). */
async function pull(deps: ProcessDeps, job: JobRow): Promise<JobRow | undefined> {
  const db = deps.orm.em.fork();
  const outcome = await fetchSource(db, deps.storage, deps.secrets, job, deps.source);
  if (outcome.kind === 'failed') return fail(deps, job.id, outcome.reason);
  if (outcome.kind === 'unchanged') {
    await finishUnchanged(db, job.id, outcome.validators);
    deps.logger.info({ jobId: job.id }, 'import source unchanged');
    return undefined;
  }
  await recordFetched(db, job.id, outcome.sizeBytes, outcome.validators);
  return loadJob(db, job.id);
}

/** queued → processing after the cheap counting pass that gives `total` (docs/imports.md, "Jobs and their rules"). */
async function begin(deps: ProcessDeps, queued: JobRow): Promise<JobRow | undefined> {
  const job = queued.source_url !== null && queued.uploaded_at === null ? await pull(deps, queued) : queued;
  if (!job) return undefined;
  const stored = await deps.storage.stat(job.storage_path);
  if (!stored) return fail(deps, job.id, 'the uploaded file is missing from storage');
  if (stored.sizeBytes > MAX_FILE_BYTES) return fail(deps, job.id, 'the file is over 100 MB');
  if (stored.sizeBytes > Number(job.file_size_bytes)) return fail(deps, job.id, 'the file is larger than the declared fileSizeBytes');
  const scan = await scanFile(deps.storage.readChunks(job.storage_path));
  if (scan.jsonArray) return fail(deps, job.id, 'the file is a JSON array, not JSONL (one JSON object per line)');
  if (scan.nonEmptyLines === 0) return fail(deps, job.id, 'the file has no non-empty lines');
  const db = deps.orm.em.fork();
  await markProcessing(db, job.id, scan.nonEmptyLines);
  return loadJob(db, job.id);
}

const NONE_KNOWN: ReadonlyMap<number, FingerprintedItem> = new Map();

/**
 * Resumes the job from its cursor, in two stages: while one batch is in the database, the next
 * is read, parsed and validated, so the consumer's CPU work overlaps Postgres's. Batches commit
 * one after the other, in file order, and each one's outcome is the one it would have had, had
 * it begun after the batch before it committed. Two batches of new lines can be in the database
 * at once (see BatchTurn); any other batch begins once the one before it committed, so its
 * lookup sees everything it wrote.
 */
async function run(deps: ProcessDeps, row: JobRow): Promise<ProcessOutcome> {
  const offset = Number(row.resume_offset);
  const stream = await deps.storage.read(row.storage_path, offset);
  const job: BatchJob = {
    db: () => deps.orm.em.fork(), jobId: row.id, catalogId: row.catalog_id, dryRun: row.dry_run,
    mediaRefreshAgeHours: deps.mediaRefreshAgeHours, logger: deps.logger, cursor: { line: Number(row.resume_line), offset: Number(row.resume_offset) },
    ...(deps.onCommitted ? { onCommitted: deps.onCommitted } : {}),
  };
  // Read lines ahead unless the last batch committed was mostly lines already stored (a re-import).
  // Lines read ahead are expected to be new: their fingerprints are not looked up, and a line
  // stored already is found unchanged by the upsert's own lookup.
  let readAhead = true;
  let committing: Promise<void> | undefined;
  // The batch in flight when it may share the database with the next one, and the commit of the
  // batch before it.
  let overlappable: BatchAhead | undefined;
  let committingBefore: Promise<void> | undefined;
  // Settles once the batch in flight will write no more items: when all its lines proved stored
  // already, or when it committed. From then on the next batch's fingerprints can be looked up,
  // while the batch in flight still records its counters.
  let itemsSettled: Promise<unknown> = Promise.resolve();
  const commitNext = async (batch: PreparedBatch) => {
    const known = batch.ahead ? Promise.resolve(NONE_KNOWN)
      : itemsSettled.then(() => itemsByFingerprint(job.db(), job.catalogId, batch.fingerprints));
    // Awaited by the commit, which may never start (a stop); this only keeps a failure meanwhile
    // from counting as unhandled. The same for `committing` below.
    known.catch(() => undefined);
    const keys = batch.ahead ? keysOf(batch.ahead) : undefined;
    const ahead = keys && overlappable && !sharesKeys(overlappable, keys) ? overlappable : undefined;
    if (committing) {
      await (ahead ? committingBefore : committing);
      if (deps.stopping?.()) throw new JobStopped();
    }
    const turn = batchTurn(ahead);
    const commit = inSpan('import batch', { childOnly: true, attributes: { 'catalog.import.lines': batch.lines.length } }, () => commitBatch(job, batch, known, turn)).then((unchanged) => {
      readAhead = unchanged < batch.lines.length / 2;
    });
    commit.catch(() => undefined).finally(turn.wrote);
    committingBefore = committing;
    committing = commit;
    committing.catch(() => undefined);
    overlappable = keys && { keys, written: turn.written, committed: commit };
    itemsSettled = known.then((found) => (found.size === batch.lines.length ? undefined : commit)).catch(() => undefined);
  };
  let lines: FileLine[] = [];
  try {
    for await (const line of readLines(stream, { line: Number(row.resume_line), offset })) {
      lines.push(line);
      if (lines.length >= (readAhead ? BATCH_LINES : KNOWN_RUN_LINES)) {
        await commitNext(await prepareBatch(lines, readAhead));
        lines = [];
      }
    }
    if (lines.length > 0) await commitNext(await prepareBatch(lines, readAhead));
    // The last batch commits after the one before it.
    await committing;
  } catch (error) {
    stream.destroy();
    // Never leave a batch's transaction running behind the outcome.
    await Promise.allSettled([committingBefore, committing]);
    if (error instanceof JobStopped) return 'stopped';
    throw error;
  }
  return complete(deps, row.id);
}

/** processing → completed | completed_with_errors | failed (every line failed), with its event. */
async function complete(deps: ProcessDeps, jobId: string): Promise<ProcessOutcome> {
  const outcome = await deps.orm.em.fork().transactional(async (tx) => {
    const job = await loadJob(tx, jobId, { lock: true });
    if (job?.status !== 'processing') return 'stopped' as const;
    if (job.failed > 0 && job.failed === job.total) await finishJob(tx, job, 'failed', 'every line failed; see the line errors');
    else await finishJob(tx, job, job.failed > 0 ? 'completed_with_errors' : 'completed', null);
    return 'finished' as const;
  });
  deps.logger.info({ jobId, outcome }, 'import processed');
  return outcome;
}
