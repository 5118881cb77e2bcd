// The import store: every statement on import_jobs and import_errors, the job's state transitions among them.
import type { ImportErrorType, ImportStatus } from '../../generated/client.ts';
import type { Session } from '../../platform/db/connections.ts';
import { query, sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { domainEvent, eventRow, messageRow, writeOutbox } from '../events/outbox.ts';
import { isoTime } from '../items/view.ts';
import { afterCursor, encodeCursor, encodeLineCursor, keysetPage } from '../pagination.ts';

/** First key of the advisory locks of this feature: per-catalog job creation. */
export const IMPORT_LOCK_SPACE = 7_214_004;
/** Second key space: the per-job processing lock. */
export const JOB_LOCK_SPACE = IMPORT_LOCK_SPACE + 1;

/** The message on catalog.imports.v1 that asks a consumer to process a job. */
export interface ImportMessage {
  jobId: string;
  catalogId: string;
}

/** A job as JOB_SELECT reads it. */
export interface JobRow {
  id: string;
  catalog_id: string;
  status: ImportStatus;
  dry_run: boolean;
  file_size_bytes: string | number;
  storage_path: string;
  uploaded_at: string | null;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  unchanged: number;
  error_count: number;
  dry_run_created: number;
  dry_run_updated: number;
  resume_line: string | number;
  resume_offset: string | number;
  failure_reason: string | null;
  retry_of: string | null;
  upload_expires_at: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** Exact created_at (microseconds), for list cursors. */
  created_at_text: string;
  /** The source's address with its query values redacted (source-store.ts, redactedUrl): the full one is sealed apart, read by the fetch only. */
  source_url: string | null;
  source_if_changed: boolean;
  source_etag: string | null;
  source_last_modified: string | null;
  source_unchanged: boolean;
}

const JOB_SELECT = sql.raw(`
SELECT j.id, j.catalog_id, j.status, j.dry_run, j.file_size_bytes, j.storage_path, ${isoTime('j.uploaded_at')} AS uploaded_at,
  j.total, j.processed, j.succeeded, j.failed, j.unchanged, j.error_count, j.dry_run_created, j.dry_run_updated,
  j.resume_line, j.resume_offset, j.failure_reason, j.retry_of, ${isoTime('j.upload_expires_at')} AS upload_expires_at,
  ${isoTime('j.created_at')} AS created_at, ${isoTime('j.started_at')} AS started_at, ${isoTime('j.finished_at')} AS finished_at,
  j.created_at::text AS created_at_text, j.source_url, j.source_if_changed, j.source_etag, j.source_last_modified, j.source_unchanged
FROM import_jobs j`);

const forUpdate = (lock: boolean) => sql.raw(lock ? ' FOR UPDATE' : '');

/** The job, optionally row-locked for the caller's transaction; with a catalog, only that catalog's. */
export async function loadJob(db: Db, jobId: string, options: { catalogId?: string; lock?: boolean } = {}): Promise<JobRow | undefined> {
  const catalog = options.catalogId === undefined ? sql`` : sql` AND j.catalog_id = ${options.catalogId}::uuid`;
  const [row] = await query<JobRow>(db, sql`${JOB_SELECT} WHERE j.id = ${jobId}::uuid${catalog}${forUpdate(options.lock ?? false)}`);
  return row;
}

/** A page of the catalog's jobs, newest first. */
export async function listJobs(db: Db, catalogId: string, page: { limit: number; cursor?: string | undefined; status?: ImportStatus | undefined }) {
  const status = page.status === undefined ? sql`` : sql` AND j.status = ${page.status}`;
  const after = page.cursor === undefined ? sql`` : sql` AND ${afterCursor(page.cursor, sql`j.created_at, j.id`, 'desc')}`;
  const rows = await query<JobRow>(db, sql`${JOB_SELECT} WHERE j.catalog_id = ${catalogId}::uuid${status}${after}
    ORDER BY j.created_at DESC, j.id DESC LIMIT ${page.limit + 1}`);
  return keysetPage(rows, page.limit, (row) => encodeCursor({ at: row.created_at_text, id: row.id }));
}

/**
 * The catalog's jobs that count toward its concurrent limit: awaiting upload while the window is
 * open, queued or processing. With `lock`, takes the catalog's job-creation lock for the
 * transaction first, so two concurrent creators cannot both see room for one more.
 */
export async function countActiveJobs(tx: Db, catalogId: string, lock: boolean): Promise<number> {
  if (lock) await query(tx, 'SELECT pg_advisory_xact_lock($1, hashtext($2))', [IMPORT_LOCK_SPACE, catalogId]);
  const [row] = await query<{ n: string }>(tx, `SELECT count(*) AS n FROM import_jobs WHERE catalog_id = $1
    AND (status IN ('queued', 'processing') OR (status = 'awaiting_upload' AND upload_expires_at > now()))`, [catalogId]);
  return Number(row?.n ?? 0);
}

/** What a new job is made of. */
export interface NewJob {
  readonly id: string;
  readonly catalogId: string;
  readonly dryRun: boolean;
  readonly fileSizeBytes: number;
  readonly storagePath: string;
}

/** A new job awaiting its file for `uploadWindowSeconds`. */
export async function insertAwaitingJob(tx: Db, job: NewJob, uploadWindowSeconds: number): Promise<void> {
  await query(tx, `INSERT INTO import_jobs (id, catalog_id, status, dry_run, file_size_bytes, storage_path, upload_expires_at)
    VALUES ($1, $2, 'awaiting_upload', $3, $4, $5, now() + make_interval(secs => $6))`,
  [job.id, job.catalogId, job.dryRun, job.fileSizeBytes, job.storagePath, uploadWindowSeconds]);
}

/** A new job whose file is stored already (a retry of `retryOf`), queued with its message. */
export async function insertQueuedJob(tx: Db, job: NewJob, retryOf: string): Promise<void> {
  await query(tx, `INSERT INTO import_jobs (id, catalog_id, status, dry_run, file_size_bytes, storage_path, uploaded_at, upload_expires_at, queued_at, retry_of)
    VALUES ($1, $2, 'queued', $3, $4, $5, now(), NULL, now(), $6)`,
  [job.id, job.catalogId, job.dryRun, job.fileSizeBytes, job.storagePath, retryOf]);
  await enqueue(tx, { jobId: job.id, catalogId: job.catalogId });
}

/** The job's upload target: what the upload address names (storagePath is unique to a job). */
export async function jobForUpload(db: Db, storagePath: string) {
  const [job] = await query<Pick<JobRow, 'id' | 'catalog_id' | 'status' | 'file_size_bytes' | 'uploaded_at'>>(db,
    'SELECT id, catalog_id, status, file_size_bytes, uploaded_at FROM import_jobs WHERE storage_path = $1', [storagePath]);
  return job;
}

/** Records the job's file as uploaded; false when another upload recorded itself first or the job moved on. */
export async function markUploaded(db: Db, jobId: string): Promise<boolean> {
  const rows = await query(db, `UPDATE import_jobs SET uploaded_at = now(), updated_at = now()
    WHERE id = $1 AND status = 'awaiting_upload' AND uploaded_at IS NULL RETURNING id`, [jobId]);
  return rows.length > 0;
}

/** awaiting_upload → queued, with the message for the consumer in the same transaction. */
export async function markQueued(tx: Db, message: ImportMessage): Promise<void> {
  await query(tx, `UPDATE import_jobs SET status = 'queued', queued_at = now(), uploaded_at = coalesce(uploaded_at, now()), updated_at = now()
    WHERE id = $1`, [message.jobId]);
  await enqueue(tx, message);
}

async function enqueue(tx: Db, message: ImportMessage): Promise<void> {
  await writeOutbox(tx, [messageRow({ topic: TOPICS.imports, key: message.jobId, body: message })]);
}

/** queued → processing, with the line count the counting pass found. */
export async function markProcessing(db: Db, jobId: string, total: number): Promise<void> {
  await query(db, `UPDATE import_jobs SET status = 'processing', total = $1, started_at = now(), updated_at = now()
    WHERE id = $2 AND status = 'queued'`, [total, jobId]);
}

export const countsOf = (row: JobRow) =>
  ({ total: row.total, processed: row.processed, succeeded: row.succeeded, failed: row.failed, unchanged: row.unchanged });

/**
 * A locked, non-terminal job → a terminal status, with its import.completed / import.failed
 * event in the same transaction.
 */
export async function finishJob(tx: Db, job: JobRow, status: ImportStatus, reason: string | null): Promise<void> {
  // A source's full address and headers (credentials) are not kept past the job.
  await query(tx, `UPDATE import_jobs SET status = $1, failure_reason = $2, finished_at = now(), updated_at = now(),
      source_url_sealed = NULL, source_headers_sealed = NULL WHERE id = $3`, [status, reason, job.id]);
  const failed = status === 'failed' || status === 'cancelled';
  const base = { jobId: job.id, status };
  const rest = { counts: countsOf(job), errorCount: job.error_count, dryRun: job.dry_run };
  const data = failed ? { ...base, reason: reason ?? status, ...rest } : { ...base, ...rest };
  await writeOutbox(tx, [eventRow(domainEvent({ type: failed ? 'import.failed' : 'import.completed', catalogId: job.catalog_id, resourceId: job.id, data }))]);
}

/** Counts one more failure of the job's processing; returns how many it has had. */
export async function countProcessingFailure(tx: Db, jobId: string): Promise<number> {
  const [row] = await query<{ processing_failures: number }>(tx,
    'UPDATE import_jobs SET processing_failures = processing_failures + 1, updated_at = now() WHERE id = $1 RETURNING processing_failures', [jobId]);
  return row?.processing_failures ?? 0;
}

/** Up to 100 jobs whose upload window lapsed, row-locked; SKIP LOCKED lets several sweepers share the work. */
export async function lapsedUploadJobs(tx: Db): Promise<JobRow[]> {
  return query<JobRow>(tx, sql`${JOB_SELECT} WHERE j.status = 'awaiting_upload' AND j.upload_expires_at <= now()
    ORDER BY j.upload_expires_at LIMIT 100 FOR UPDATE SKIP LOCKED`);
}

/**
 * Up to `limit` jobs no process is running: processing jobs first (their worker died or handed
 * them over), then queued ones older than `queuedGraceSeconds`, taking each catalog's oldest in
 * turn so that one catalog's backlog does not hold up another's. A job whose processing lock is
 * held elsewhere is left out, so a sweeper spends its room only on work it can take.
 */
export async function resumableJobIds(db: Db, queuedGraceSeconds: number, limit: number): Promise<string[]> {
  if (limit <= 0) return [];
  const rows = await query<{ id: string }>(db, 'imports.resumable_jobs', `SELECT id FROM (
      SELECT id, status, queued_at, created_at, row_number() OVER (PARTITION BY catalog_id ORDER BY created_at) AS turn
      FROM import_jobs
      WHERE status = 'processing' OR (status = 'queued' AND queued_at < now() - make_interval(secs => $1))) j
    WHERE NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = $2::int4::oid AND l.objid = hashtext(j.id::text)::oid AND l.objsubid = 2)
    ORDER BY j.status = 'processing' DESC, j.turn, j.created_at LIMIT $3`, [queuedGraceSeconds, JOB_LOCK_SPACE, limit]);
  return rows.map((r) => r.id);
}

/**
 * Takes the job's processing lock on `session`, for as long as it lives; false when another
 * session holds it. A session lock, not a transaction's: a run commits many transactions, and
 * the lock must die with a killed process so that another one resumes the job.
 */
export async function tryLockJob(session: Session, jobId: string): Promise<boolean> {
  const [row] = await session.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked', [JOB_LOCK_SPACE, jobId]);
  return row?.locked === true;
}

/** What a batch adds to its job's counters. */
export interface BatchCounts {
  processed: number; succeeded: number; failed: number; unchanged: number; created: number; updated: number;
}

/** A page of the job's line errors by line number, after line `afterLine`, optionally of one type. */
export async function lineErrors(db: Db, jobId: string, page: { limit: number; afterLine: number; errorType?: ImportErrorType | undefined }) {
  const type = page.errorType === undefined ? sql`` : sql` AND error_type = ${page.errorType}`;
  const rows = await query<{ line_number: number; external_id: string | null; error_type: ImportErrorType; error_message: string; raw_line: string }>(db,
    sql`SELECT line_number, external_id, error_type, error_message, raw_line FROM import_errors
      WHERE job_id = ${jobId}::uuid AND line_number > ${page.afterLine}::int${type} ORDER BY line_number LIMIT ${page.limit + 1}`);
  return keysetPage(rows, page.limit, (row) => encodeLineCursor(row.line_number));
}

/** The numbers of the job's failed lines, in order. */
export async function failedLineNumbers(db: Db, jobId: string): Promise<number[]> {
  const rows = await query<{ line_number: number }>(db, 'SELECT line_number FROM import_errors WHERE job_id = $1 ORDER BY line_number', [jobId]);
  return rows.map((r) => r.line_number);
}
