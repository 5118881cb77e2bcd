// The statements of jobs that fetch their file from an address: creation, the source's full address and secret headers (sealed at rest), its validators, and the unchanged end.
import { createHash } from 'node:crypto';
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
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly ifChanged: boolean;
}

/** What a source answered that tells a later fetch whether it changed. */
export interface Validators {
  readonly etag: string | null;
  readonly lastModified: string | null;
}

/** The associated data of a job's sealed address and headers: they open for that job only. */
const urlContext = (jobId: string) => columnContext('import_jobs', 'source_url', jobId);
const headersContext = (jobId: string) => columnContext('import_jobs', 'source_headers', jobId);

/**
 * The address as kept in plain text (source_url): origin and path, and the query with each value
 * replaced by `REDACTED`, its name kept (`?X-Amz-Signature=REDACTED&store=REDACTED`; a part
 * without `=` is all value); no fragment. A presigned address's query holds its credential.
 * Migration 0028-sealed-source-url redacts older rows the same way, in SQL.
 */
export function redactedUrl(url: URL): string {
  const parts = url.search === '' ? [] : url.search.slice(1).split('&')
    .map((part) => (part === '' ? '' : part.includes('=') ? `${part.slice(0, part.indexOf('='))}=REDACTED` : 'REDACTED'));
  return `${url.origin}${url.pathname}${parts.length === 0 ? '' : `?${parts.join('&')}`}`;
}

/**
 * source_url_hash, what ifChanged finds the last job of the same address by: the lower-case hex
 * SHA-256 of the full address. A signature in its query is high-entropy, so the hash tells
 * nothing of it that could be guessed back.
 */
const urlHash = (url: string) => createHash('sha256').update(url, 'utf8').digest('hex');

/**
 * A new job whose file the service fetches, queued with its message: no upload window. Its full
 * address and its headers are sealed (no headers: NULL), its address kept in plain text redacted.
 */
export async function insertSourceJob(tx: Db, secrets: SecretBox, job: NewJob, source: NewSource): Promise<void> {
  const headers = Object.keys(source.headers).length === 0 ? null : secrets.seal(JSON.stringify(source.headers), headersContext(job.id));
  await query(tx, `INSERT INTO import_jobs (id, catalog_id, status, dry_run, file_size_bytes, storage_path, upload_expires_at, queued_at,
      source_url, source_url_sealed, source_url_hash, source_headers_sealed, source_if_changed)
    VALUES ($1, $2, 'queued', $3, 0, $4, NULL, now(), $5, $6, $7, $8, $9)`,
  [job.id, job.catalogId, job.dryRun, job.storagePath, redactedUrl(source.url), secrets.seal(source.url.href, urlContext(job.id)),
    urlHash(source.url.href), headers, source.ifChanged]);
  await writeOutbox(tx, [messageRow({ topic: TOPICS.imports, key: job.id, body: { jobId: job.id, catalogId: job.catalogId } })]);
}

/**
 * The job's full address, opened; read by the fetch only. Undefined once dropped: the job ended
 * (was cancelled) since it was read. A SecretKeyError when its key is not configured.
 */
export async function sourceAddress(db: Db, secrets: SecretBox, jobId: string): Promise<URL | undefined> {
  const [row] = await query<{ sealed: string | null }>(db, 'SELECT source_url_sealed AS sealed FROM import_jobs WHERE id = $1', [jobId]);
  return row?.sealed ? new URL(secrets.open(row.sealed, urlContext(jobId))) : undefined;
}

/** The caller's headers for the job's source, opened; read by the fetch only. A SecretKeyError when their key is not configured. */
export async function sourceHeaders(db: Db, secrets: SecretBox, jobId: string): Promise<Record<string, string>> {
  const [row] = await query<{ sealed: string | null }>(db, 'SELECT source_headers_sealed AS sealed FROM import_jobs WHERE id = $1', [jobId]);
  if (!row?.sealed) return {};
  return JSON.parse(secrets.open(row.sealed, headersContext(jobId))) as Record<string, string>;
}

/** The validators of the last completed job of this catalog from the full address `url`, to send as conditions. */
export async function lastValidators(db: Db, catalogId: string, url: URL): Promise<Validators | undefined> {
  const [row] = await query<{ etag: string | null; last_modified: string | null }>(db, `SELECT source_etag AS etag, source_last_modified AS last_modified
    FROM import_jobs WHERE catalog_id = $1 AND source_url_hash = $2 AND status IN ('completed', 'completed_with_errors')
      AND (source_etag IS NOT NULL OR source_last_modified IS NOT NULL)
    ORDER BY finished_at DESC LIMIT 1`, [catalogId, urlHash(url.href)]);
  return row && { etag: row.etag, lastModified: row.last_modified };
}

/** The file is stored: its size, the source's validators; the full address and the headers are not kept past their use. */
export async function recordFetched(db: Db, jobId: string, sizeBytes: number, validators: Validators): Promise<void> {
  await query(db, `UPDATE import_jobs SET file_size_bytes = $2, uploaded_at = now(), source_etag = $3, source_last_modified = $4,
      source_url_sealed = NULL, source_headers_sealed = NULL, updated_at = now() WHERE id = $1`, [jobId, sizeBytes, validators.etag, validators.lastModified]);
}

/** The source answered as the last completed job's: the job completes without a line, unless it was cancelled meanwhile. */
export async function finishUnchanged(db: Db, jobId: string, validators: Validators): Promise<void> {
  await db.transactional(async (tx) => {
    const job = await loadJob(tx, jobId, { lock: true });
    if (job?.status !== 'queued') return;
    await query(tx, `UPDATE import_jobs SET source_unchanged = true, source_etag = $2, source_last_modified = $3, source_url_sealed = NULL,
        source_headers_sealed = NULL, started_at = now() WHERE id = $1`, [jobId, validators.etag, validators.lastModified]);
    await finishJob(tx, job, 'completed', null);
  });
}

/** How many jobs' full addresses and headers are sealed with each key (`catalog secrets status`); the key id read by sealedKeyIdSql. */
export async function sourceSecretKeys(db: Db): Promise<Array<{ column: string; keyId: string; values: number }>> {
  const rows = await query<{ name: string; key_id: string; n: string }>(db, 'imports.source_secret_keys', `SELECT c.name, ${sealedKeyIdSql('c.sealed')} AS key_id,
      count(*) AS n FROM import_jobs j CROSS JOIN LATERAL (VALUES ('source_headers_sealed', j.source_headers_sealed), ('source_url_sealed', j.source_url_sealed)) AS c(name, sealed)
    WHERE c.sealed IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2`);
  return rows.map((r) => ({ column: `import_jobs.${r.name}`, keyId: r.key_id, values: Number(r.n) }));
}

/**
 * Re-seals with the current key the full addresses and headers sealed with another, of up to
 * `limit` jobs, in one transaction (`catalog secrets rotate`); returns how many values. The rows
 * stay locked until it commits, so a job ending meanwhile does not get them back.
 */
export async function resealSourceSecrets(db: Db, secrets: SecretBox, limit: number): Promise<number> {
  return db.transactional(async (tx) => {
    const rows = await query<{ id: string; url: string | null; headers: string | null }>(tx, 'imports.source_secrets_to_reseal', `SELECT id,
        source_url_sealed AS url, source_headers_sealed AS headers FROM import_jobs
      WHERE ${sealedKeyIdSql('source_url_sealed')} <> $1 OR ${sealedKeyIdSql('source_headers_sealed')} <> $1 LIMIT $2 FOR UPDATE`, [secrets.currentKeyId, limit]);
    if (rows.length === 0) return 0;
    let values = 0;
    const reseal = (sealed: string | null, context: string): string | null => {
      if (sealed === null || secrets.keyIdOf(sealed) === secrets.currentKeyId) return sealed;
      values += 1;
      return secrets.seal(secrets.open(sealed, context), context);
    };
    const urls = rows.map((r) => reseal(r.url, urlContext(r.id)));
    const headers = rows.map((r) => reseal(r.headers, headersContext(r.id)));
    await query(tx, 'imports.reseal_source_secrets', `UPDATE import_jobs j SET source_url_sealed = v.url, source_headers_sealed = v.headers
      FROM unnest($1::uuid[], $2::text[], $3::text[]) AS v(id, url, headers) WHERE j.id = v.id`, [rows.map((r) => r.id), urls, headers]);
    return values;
  });
}
