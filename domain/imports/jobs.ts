// Import jobs: creation with its signed upload address, reads, start, cancel, and the terminal event.
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../platform/ids.ts';
import { decodeCursor, encodeCursor } from '../pagination.ts';
import type { ImportCreated, ImportJob } from '../../generated/client.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import { importPath } from '../../platform/storage/storage.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { domainEvent, eventRow, messageRow, writeOutbox } from '../events/outbox.ts';
import { conflict, notFound, validationError } from '../../platform/errors.ts';
import { ACTIVE_SQL, JOB_SELECT, TERMINAL, counts, jobView } from './view.ts';
import type { ImportStatus, JobRow } from './view.ts';

// The spec's limits: 1 h upload window, 100 MB per file, 5 concurrent jobs per catalog.
export const UPLOAD_WINDOW_SECONDS = 3600;
export const MAX_FILE_BYTES = 100 * 1024 * 1024;
export const MAX_CONCURRENT_JOBS = 5;
export const IMPORT_CONTENT_TYPE = 'application/x-ndjson';
/** First key of the advisory locks of this feature (per-catalog creation, per-job processing). */
export const IMPORT_LOCK_SPACE = 7_214_004;

/** The message on catalog.imports.v1 that asks a consumer to process a job. */
export interface ImportMessage {
  jobId: string;
  catalogId: string;
}

type Tx = EntityManager;
const inTransaction = <T>(em: EntityManager, run: (tx: Tx) => Promise<T>): Promise<T> =>
  em.isInTransaction() ? run(em) : em.transactional(run);

export async function findJob(em: EntityManager, catalogId: string, jobId: string, lock = false): Promise<JobRow> {
  const [row] = await em.execute<JobRow[]>(`${JOB_SELECT} WHERE j.id = ? AND j.catalog_id = ?${lock ? ' FOR UPDATE' : ''}`, [jobId, catalogId]);
  if (!row) throw notFound('Import job');
  return row;
}

/**
 * Refuses a 6th job. With `lock`, takes the catalog's job-creation lock for the transaction
 * first, so two concurrent creators cannot both see room for one more.
 */
export async function assertCapacity(tx: Tx, catalogId: string, lock = true): Promise<void> {
  if (lock) await tx.execute('SELECT pg_advisory_xact_lock(?, hashtext(?))', [IMPORT_LOCK_SPACE, catalogId]);
  const [row] = await tx.execute<Array<{ n: string }>>(`SELECT count(*) AS n FROM import_jobs WHERE catalog_id = ? AND ${ACTIVE_SQL}`, [catalogId]);
  const active = Number(row?.n ?? 0);
  if (active >= MAX_CONCURRENT_JOBS) {
    throw conflict(`at most ${MAX_CONCURRENT_JOBS} concurrent import jobs per catalog`, [
      { path: 'imports', message: `${active} jobs are awaiting upload, queued or processing` },
    ]);
  }
}

export async function createImport(
  em: EntityManager,
  storage: ObjectStorage,
  catalogId: string,
  input: { fileSizeBytes: number; dryRun?: boolean | undefined },
): Promise<ImportCreated> {
  // The contract's schema already caps the size; kept here too because domain code has other doors.
  if (input.fileSizeBytes > MAX_FILE_BYTES) {
    throw validationError([{ path: 'fileSizeBytes', message: `must be at most ${MAX_FILE_BYTES} (100 MB): split the file into several jobs` }]);
  }
  return inTransaction(em, async (tx) => {
    await assertCapacity(tx, catalogId);
    const jobId = newId();
    const storagePath = importPath(catalogId, jobId);
    await tx.execute(
      `INSERT INTO import_jobs (id, catalog_id, status, dry_run, file_size_bytes, storage_path, upload_expires_at)
       VALUES (?, ?, 'awaiting_upload', ?, ?, ?, now() + make_interval(secs => ?))`,
      [jobId, catalogId, input.dryRun ?? false, input.fileSizeBytes, storagePath, UPLOAD_WINDOW_SECONDS],
    );
    const uploadUrl = await storage.signUpload(storagePath, {
      contentType: IMPORT_CONTENT_TYPE, sizeBytes: input.fileSizeBytes, expiresInSeconds: UPLOAD_WINDOW_SECONDS,
    });
    return { jobId, uploadUrl, storagePath, expiresIn: UPLOAD_WINDOW_SECONDS, uploadMethod: 'PUT', contentType: IMPORT_CONTENT_TYPE };
  });
}

export async function getImport(em: EntityManager, catalogId: string, jobId: string): Promise<ImportJob> {
  return jobView(await findJob(em, catalogId, jobId));
}

export async function listImports(
  em: EntityManager,
  catalogId: string,
  page: { limit: number; cursor?: string | undefined; status?: ImportStatus | undefined },
): Promise<{ imports: ImportJob[]; nextCursor: string | null }> {
  const params: unknown[] = [catalogId];
  let where = 'j.catalog_id = ?';
  if (page.status) {
    where += ' AND j.status = ?';
    params.push(page.status);
  }
  if (page.cursor !== undefined) {
    const after = decodeCursor(page.cursor);
    where += ' AND (j.created_at, j.id) < (?::timestamptz, ?::uuid)';
    params.push(after.at, after.id);
  }
  const rows = await em.execute<JobRow[]>(`${JOB_SELECT} WHERE ${where} ORDER BY j.created_at DESC, j.id DESC LIMIT ${page.limit + 1}`, params);
  const shown = rows.slice(0, page.limit);
  const last = shown.at(-1);
  return {
    imports: shown.map(jobView),
    nextCursor: rows.length > page.limit && last ? encodeCursor({ at: last.created_at_text, id: last.id }) : null,
  };
}

/** awaiting_upload → queued, with the message for the consumer in the same transaction. */
export async function startImport(em: EntityManager, storage: ObjectStorage, catalogId: string, jobId: string): Promise<ImportJob> {
  return inTransaction(em, async (tx) => {
    const job = await findJob(tx, catalogId, jobId, true);
    if (job.status !== 'awaiting_upload') {
      throw conflict(`job is ${job.status}; only awaiting_upload jobs can be started`, [{ path: 'status', message: `is ${job.status}` }]);
    }
    if (job.upload_expires_at !== null && Date.parse(job.upload_expires_at) <= Date.now()) {
      throw conflict('the upload window of this job has expired; create a new job', [{ path: 'uploadExpiresAt', message: 'has passed' }]);
    }
    const stored = await storage.stat(job.storage_path);
    if (!stored) throw conflict('no file has been uploaded for this job yet', [{ path: 'file', message: `PUT the file to the job's uploadUrl first` }]);
    await tx.execute(`UPDATE import_jobs SET status = 'queued', queued_at = now(), uploaded_at = coalesce(uploaded_at, now()), updated_at = now() WHERE id = ?`, [jobId]);
    await enqueue(tx, { jobId, catalogId });
    return jobView(await findJob(tx, catalogId, jobId));
  });
}

export async function enqueue(tx: Tx, message: ImportMessage): Promise<void> {
  await writeOutbox((sql, params) => tx.execute(sql, params), [messageRow({ topic: TOPICS.imports, key: message.jobId, body: message })]);
}

/**
 * Any non-terminal job → cancelled. Takes the job's row lock, so a batch in flight commits first;
 * the consumer sees the status at its next batch and stops (committed lines stay committed).
 */
export async function cancelImport(em: EntityManager, catalogId: string, jobId: string): Promise<ImportJob> {
  return inTransaction(em, async (tx) => {
    const job = await findJob(tx, catalogId, jobId, true);
    if (TERMINAL.has(job.status)) {
      throw conflict(`job is already ${job.status}`, [{ path: 'status', message: `is ${job.status}` }]);
    }
    await finishJob(tx, job, 'cancelled', 'cancelled by request');
    return jobView(await findJob(tx, catalogId, jobId));
  });
}

/**
 * Moves a locked, non-terminal job to a terminal status and writes its import.completed /
 * import.failed event in the same transaction.
 */
export async function finishJob(tx: Tx, job: JobRow, status: ImportStatus, reason: string | null): Promise<void> {
  await tx.execute(
    'UPDATE import_jobs SET status = ?, failure_reason = ?, finished_at = now(), updated_at = now() WHERE id = ?',
    [status, reason, job.id],
  );
  const failed = status === 'failed' || status === 'cancelled';
  const data = failed
    ? { jobId: job.id, status, reason: reason ?? status, counts: counts(job), errorCount: job.error_count, dryRun: job.dry_run }
    : { jobId: job.id, status, counts: counts(job), errorCount: job.error_count, dryRun: job.dry_run };
  const event = domainEvent({ type: failed ? 'import.failed' : 'import.completed', catalogId: job.catalog_id, resourceId: job.id, data });
  await writeOutbox((sql, params) => tx.execute(sql, params), [eventRow(event)]);
}
