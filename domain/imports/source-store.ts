// The statements of jobs that fetch their file from an address: creation, the source's secret headers (sealed at rest), its validators, and the unchanged end.
import { columnContext, sealedKeyIdSql } from '../../platform/crypto/secret-box.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
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

/** The associated data of a job's sealed headers: they open for that job only. */
const headersContext = (jobId: string) => columnContext('import_jobs', 'source_headers', jobId);

/** A new job whose file the service fetches, queued with its message: no upload window. Its headers are sealed (none: NULL). */
export async function insertSourceJob(tx: Db, secrets: SecretBox, job: NewJob, source: NewSource): Promise<void> {
  const sealed = Object.keys(source.headers).length === 0 ? null : secrets.seal(JSON.stringify(source.headers), headersContext(job.id));
  await query(tx, `INSERT INTO import_jobs (id, catalog_id, status, dry_run, file_size_bytes, storage_path, upload_expires_at, queued_at,
      source_url, source_headers_sealed, source_if_changed)
    VALUES ($1, $2, 'queued', $3, 0, $4, NULL, now(), $5, $6, $7)`,
  [job.id, job.catalogId, job.dryRun, job.storagePath, source.url, sealed, source.ifChanged]);
  await writeOutbox(tx, [messageRow({ topic: TOPICS.imports, key: job.id, body: { jobId: job.id, catalogId: job.catalogId } })]);
}

/** The caller's headers for the job's source, opened; read by the fetch only. A SecretKeyError when their key is not configured. */
export async function sourceHeaders(db: Db, secrets: SecretBox, jobId: string): Promise<Record<string, string>> {
  const [row] = await query<{ sealed: string | null }>(db, 'SELECT source_headers_sealed AS sealed FROM import_jobs WHERE id = $1', [jobId]);
  if (!row?.sealed) return {};
  return JSON.parse(secrets.open(row.sealed, headersContext(jobId))) as Record<string, string>;
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
      source_headers_sealed = NULL, updated_at = now() WHERE id = $1`, [jobId, sizeBytes, validators.etag, validators.lastModified]);
}

/** The source answered as the last completed job's: the job completes without a line, unless it was cancelled meanwhile. */
export async function finishUnchanged(db: Db, jobId: string, validators: Validators): Promise<void> {
  await db.transactional(async (tx) => {
    const job = await loadJob(tx, jobId, { lock: true });
    if (job?.status !== 'queued') return;
    await query(tx, `UPDATE import_jobs SET source_unchanged = true, source_etag = $2, source_last_modified = $3, source_headers_sealed = NULL,
        started_at = now() WHERE id = $1`, [jobId, validators.etag, validators.lastModified]);
    await finishJob(tx, job, 'completed', null);
  });
}

/** How many jobs' headers are sealed with each key (`catalog secrets status`); the key id read by sealedKeyIdSql. */
export async function sourceHeaderKeys(db: Db): Promise<Array<{ column: string; keyId: string; values: number }>> {
  const rows = await query<{ key_id: string; n: string }>(db, 'imports.header_keys', `SELECT ${sealedKeyIdSql('source_headers_sealed')} AS key_id,
      count(*) AS n FROM import_jobs WHERE source_headers_sealed IS NOT NULL GROUP BY 1 ORDER BY 1`);
  return rows.map((r) => ({ column: 'import_jobs.source_headers_sealed', keyId: r.key_id, values: Number(r.n) }));
}

/**
 * Re-seals with the current key up to `limit` jobs' headers sealed with another, in one
 * transaction (`catalog secrets rotate`); returns how many. The rows stay locked until it commits,
 * so a job ending meanwhile does not get its headers back.
 */
export async function resealSourceHeaders(db: Db, secrets: SecretBox, limit: number): Promise<number> {
  return db.transactional(async (tx) => {
    const rows = await query<{ id: string; sealed: string }>(tx, 'imports.headers_to_reseal', `SELECT id, source_headers_sealed AS sealed FROM import_jobs
      WHERE source_headers_sealed IS NOT NULL AND ${sealedKeyIdSql('source_headers_sealed')} <> $1 LIMIT $2 FOR UPDATE`, [secrets.currentKeyId, limit]);
    if (rows.length === 0) return 0;
    const resealed = rows.map((r) => secrets.seal(secrets.open(r.sealed, headersContext(r.id)), headersContext(r.id)));
    await query(tx, 'imports.reseal_headers', `UPDATE import_jobs j SET source_headers_sealed = v.sealed
      FROM unnest($1::uuid[], $2::text[]) AS v(id, sealed) WHERE j.id = v.id`, [rows.map((r) => r.id), resealed]);
    return rows.length;
  });
}
