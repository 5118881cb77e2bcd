// Import jobs through the API: creation with its signed upload address, reads, start and cancel.
import type { ImportCreated, ImportJob } from '../../generated/client.ts';
import type { Actor } from '../../platform/actor.ts';
import type { Db } from '../../platform/db/sql.ts';
import { conflict, notFound, validationError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import { countActiveJobs, finishJob, insertAwaitingJob, listJobs, loadJob, markQueued } from './job-store.ts';
import type { JobRow } from './job-store.ts';
import { recordAudit } from '../audit/audit-log.ts';
import { TERMINAL, jobView } from './view.ts';
import type { ImportStatus } from './view.ts';

// The spec's limits: 1 h upload window, 100 MB per file, 5 concurrent jobs per catalog.
export const UPLOAD_WINDOW_SECONDS = 3600;
export const MAX_FILE_BYTES = 100 * 1024 * 1024;
export const MAX_CONCURRENT_JOBS = 5;
export const IMPORT_CONTENT_TYPE = 'application/x-ndjson';

/** `imports/<catalogId>/<jobId>.jsonl`: the catalog in the path keeps tenants apart in a shared bucket. */
export const importPath = (catalogId: string, jobId: string) => `imports/${catalogId}/${jobId}.jsonl`;

/** The catalog's job; another catalog's is as absent as a missing one. */
export async function findJob(db: Db, catalogId: string, jobId: string, lock = false): Promise<JobRow> {
  const row = await loadJob(db, jobId, { catalogId, lock });
  if (!row) throw notFound('Import job');
  return row;
}

/**
 * Refuses a 6th job. With `lock`, takes the catalog's job-creation lock for the transaction
 * first, so two concurrent creators cannot both see room for one more.
 */
export async function assertCapacity(tx: Db, catalogId: string, lock = true): Promise<void> {
  const active = await countActiveJobs(tx, catalogId, lock);
  if (active >= MAX_CONCURRENT_JOBS) {
    throw conflict(`at most ${MAX_CONCURRENT_JOBS} concurrent import jobs per catalog`, [
      { path: 'imports', message: `${active} jobs are awaiting upload, queued or processing` },
    ]);
  }
}

export async function createImport(
  db: Db,
  storage: ObjectStorage,
  catalogId: string,
  input: { fileSizeBytes: number; dryRun?: boolean | undefined },
): Promise<ImportCreated> {
  // The contract's schema already caps the size; kept here too because domain code has other doors.
  if (input.fileSizeBytes > MAX_FILE_BYTES) {
    throw validationError([{ path: 'fileSizeBytes', message: `must be at most ${MAX_FILE_BYTES} (100 MB): split the file into several jobs` }]);
  }
  return db.transactional(async (tx) => {
    await assertCapacity(tx, catalogId);
    const jobId = newId();
    const storagePath = importPath(catalogId, jobId);
    await insertAwaitingJob(tx, { id: jobId, catalogId, dryRun: input.dryRun ?? false, fileSizeBytes: input.fileSizeBytes, storagePath },
      UPLOAD_WINDOW_SECONDS);
    const uploadUrl = await storage.signUpload(storagePath, {
      contentType: IMPORT_CONTENT_TYPE, sizeBytes: input.fileSizeBytes, expiresInSeconds: UPLOAD_WINDOW_SECONDS,
    });
    return { jobId, uploadUrl, storagePath, expiresIn: UPLOAD_WINDOW_SECONDS, uploadMethod: 'PUT', contentType: IMPORT_CONTENT_TYPE };
  });
}

export async function getImport(db: Db, catalogId: string, jobId: string): Promise<ImportJob> {
  return jobView(await findJob(db, catalogId, jobId));
}

export async function listImports(
  db: Db,
  catalogId: string,
  page: { limit: number; cursor?: string | undefined; status?: ImportStatus | undefined },
): Promise<{ imports: ImportJob[]; nextCursor: string | null }> {
  const { rows, nextCursor } = await listJobs(db, catalogId, page);
  return { imports: rows.map(jobView), nextCursor };
}

/** awaiting_upload → queued, with the message for the consumer in the same transaction. */
export async function startImport(db: Db, storage: ObjectStorage, catalogId: string, jobId: string): Promise<ImportJob> {
  return db.transactional(async (tx) => {
    const job = await findJob(tx, catalogId, jobId, true);
    if (job.status !== 'awaiting_upload') {
      throw conflict(`job is ${job.status}; only awaiting_upload jobs can be started`, [{ path: 'status', message: `is ${job.status}` }]);
    }
    if (job.upload_expires_at !== null && Date.parse(job.upload_expires_at) <= Date.now()) {
      throw conflict('the upload window of this job has expired; create a new job', [{ path: 'uploadExpiresAt', message: 'has passed' }]);
    }
    const stored = await storage.stat(job.storage_path);
    if (!stored) throw conflict('no file has been uploaded for this job yet', [{ path: 'file', message: `PUT the file to the job's uploadUrl first` }]);
    await markQueued(tx, { jobId, catalogId });
    return jobView(await findJob(tx, catalogId, jobId));
  });
}

/**
 * Any non-terminal job → cancelled. Takes the job's row lock, so a batch in flight commits first;
 * the consumer sees the status at its next batch and stops (committed lines stay committed).
 */
export async function cancelImport(db: Db, catalogId: string, jobId: string, actor: Actor): Promise<ImportJob> {
  return db.transactional(async (tx) => {
    const job = await findJob(tx, catalogId, jobId, true);
    if (TERMINAL.has(job.status)) {
      throw conflict(`job is already ${job.status}`, [{ path: 'status', message: `is ${job.status}` }]);
    }
    const before = { status: job.status };
    await finishJob(tx, job, 'cancelled', 'cancelled by request');
    const after = jobView(await findJob(tx, catalogId, jobId));
    await recordAudit(tx, actor, { catalogId, action: 'import.cancelled', resourceType: 'import', resourceId: jobId, before, after: { status: after.status } });
    return after;
  });
}
