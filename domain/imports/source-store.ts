// The statements of jobs that fetch their file from an address: creation, the source's secret headers, its validators, and the unchanged end.
import { query } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { finishJob, loadJob } from './job-store.ts';
import type { NewJob } from './job-store.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { messageRow, writeOutbox } from '../events/outbox.ts';

/** What the caller said of the address. */
export interface NewSource {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly ifChanged: boolean;
}

/** What a source answered that tells a later fetch whether it changed. */
export interface Validators {
  readonly etag: string | null;
  readonly lastModified: string | null;
}

/** A new job whose file the service fetches, queued with its message: no upload window. */
export async function insertSourceJob(tx: Db, job: NewJob, source: NewSource): Promise<void> {
  await query(tx, `INSERT INTO import_jobs (id, catalog_id, status, dry_run, file_size_bytes, storage_path, upload_expires_at, queued_at,
      source_url, source_headers, source_if_changed)
    VALUES ($1, $2, 'queued', $3, 0, $4, NULL, now(), $5, $6, $7)`,
  [job.id, job.catalogId, job.dryRun, job.storagePath, source.url, JSON.stringify(source.headers), source.ifChanged]);
  await writeOutbox(tx, [messageRow({ topic: TOPICS.imports, key: job.id, body: { jobId: job.id, catalogId: job.catalogId } })]);
}

/** The caller's headers for the job's source; read by the fetch only. */
export async function sourceHeaders(db: Db, jobId: string): Promise<Record<string, string>> {
  const [row] = await query<{ h: Record<string, string> | null }>(db, 'SELECT source_headers AS h FROM import_jobs WHERE id = $1', [jobId]);
  return row?.h ?? {};
}

/** The validators of the last completed job of this catalog from `url`, to send as conditions. */
export async function lastValidators(db: Db, catalogId: string, url: string): Promise<Validators | undefined> {
  const [row] = await query<{ etag: string | null; last_modified: string | null }>(db, `SELECT source_etag AS etag, source_last_modified AS last_modified
    FROM import_jobs WHERE catalog_id = $1 AND source_url = $2 AND status IN ('completed', 'completed_with_errors')
      AND (source_etag IS NOT NULL OR source_last_modified IS NOT NULL)
    ORDER BY finished_at DESC LIMIT 1`, [catalogId, url]);
  return row && { etag: row.etag, lastModified: row.last_modified };
}

/** The file is stored: its size, the source's validators; the headers are not kept past their use. */
export async function recordFetched(db: Db, jobId: string, sizeBytes: number, validators: Validators): Promise<void> {
  await query(db, `UPDATE import_jobs SET file_size_bytes = $2, uploaded_at = now(), source_etag = $3, source_last_modified = $4,
      source_headers = NULL, updated_at = now() WHERE id = $1`, [jobId, sizeBytes, validators.etag, validators.lastModified]);
}

/** The source answered as the last completed job's: the job completes without a line, unless it was cancelled meanwhile. */
export async function finishUnchanged(db: Db, jobId: string, validators: Validators): Promise<void> {
  await db.transactional(async (tx) => {
    const job = await loadJob(tx, jobId, { lock: true });
    if (job?.status !== 'queued') return;
    await query(tx, `UPDATE import_jobs SET source_unchanged = true, source_etag = $2, source_last_modified = $3, source_headers = NULL,
        started_at = now() WHERE id = $1`, [jobId, validators.etag, validators.lastModified]);
    await finishJob(tx, job, 'completed', null);
  });
}
