// The asset store: every statement on media_assets (registration on the upsert path, the consumer's loads and recorded changes).
import { query } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';

/** An asset registered by an upsert: new (`inserted`) or known and due for a refresh. */
export interface RegisteredAsset {
  readonly source_url_hash: string;
  readonly source_url: string;
  readonly inserted: boolean;
  /** The registering transaction's time (database clock, µs). */
  readonly queued_at: string;
}

/**
 * In the caller's transaction: inserts the assets new to the catalog, and claims (updated_at)
 * the known ones last checked more than `refreshAgeMs` ago and not claimed within it, so a burst
 * of changed items queues an asset once. Returns both kinds; the others are left alone. Rows
 * given sorted by hash, so concurrent upserts lock shared asset rows in one order and cannot deadlock.
 */
export function registerAssets(
  db: Db, catalogId: string, assets: ReadonlyArray<{ id: string; hash: string; url: string }>, refreshAgeMs: number,
): Promise<RegisteredAsset[]> {
  return query<RegisteredAsset>(db,
    `INSERT INTO media_assets AS a (id, catalog_id, source_url, source_url_hash)
      SELECT r.id, $1::uuid, r.u, r.h FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, h text, u text)
      ON CONFLICT ON CONSTRAINT media_assets_catalog_hash_key DO UPDATE SET updated_at = now()
        WHERE coalesce(a.last_checked_at, a.created_at) < now() - $3 * interval '1 millisecond'
          AND a.updated_at < now() - $3 * interval '1 millisecond'
      RETURNING a.source_url_hash, a.source_url, (xmax = 0) AS inserted,
        to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS queued_at`,
    [catalogId, JSON.stringify(assets.map((a) => ({ id: a.id, h: a.hash, u: a.url }))), refreshAgeMs]);
}

/** An asset as the consumer reads it for a job. */
export interface StoredAsset {
  readonly id: string;
  readonly catalogId: string;
  readonly sourceUrl: string;
  readonly sourceUrlHash: string;
  readonly status: 'pending' | 'ingested' | 'failed';
  readonly etag: string | null;
  readonly contentSha256: string | null;
  /** Checked at or after the job was queued: a redelivered or superseded job has nothing to do. */
  readonly doneForJob: boolean;
}

/** The assets of some jobs (`queuedAt`: when each was queued) in one query. */
export async function findAssets(
  db: Db, jobs: ReadonlyArray<{ catalogId: string; sourceUrlHash: string; queuedAt: string }>,
): Promise<StoredAsset[]> {
  const rows = await query<{
    id: string; catalog_id: string; source_url: string; source_url_hash: string; status: StoredAsset['status'];
    etag: string | null; content_sha256: string | null; done: boolean;
  }>(db,
    `SELECT a.id, a.catalog_id, a.source_url, a.source_url_hash, a.status, a.etag, a.content_sha256,
        coalesce(a.last_checked_at >= k.q, false) AS done
      FROM jsonb_to_recordset($1::jsonb) AS k(c uuid, h text, q timestamptz)
      JOIN media_assets a ON a.catalog_id = k.c AND a.source_url_hash = k.h`,
    [JSON.stringify(jobs.map((j) => ({ c: j.catalogId, h: j.sourceUrlHash, q: j.queuedAt })))]);
  return rows.map((row) => ({
    id: row.id, catalogId: row.catalog_id, sourceUrl: row.source_url, sourceUrlHash: row.source_url_hash,
    status: row.status, etag: row.etag, contentSha256: row.content_sha256, doneForJob: row.done,
  }));
}

/**
 * One asset's change as written: `k` is its kind (`ingested`, `checked`, `failed`, or
 * `refresh_failed` for an ingested asset whose refresh failed: it keeps its image); `n` attempts
 * to add; the image's columns for `ingested`, the ETag for `checked`, the error for the failures.
 */
export interface AssetChange {
  readonly id: string;
  readonly k: 'ingested' | 'checked' | 'failed' | 'refresh_failed';
  readonly n: number;
  readonly e?: string | null;
  readonly ct?: string;
  readonly w?: number;
  readonly h?: number;
  readonly bs?: number;
  readonly sha?: string;
  readonly p?: string;
  readonly err?: string;
}

/** Writes a group of changes (one per asset) in one statement; each asset is marked checked now. */
export async function writeAssetChanges(db: Db, changes: readonly AssetChange[]): Promise<void> {
  await query(db, `UPDATE media_assets a SET
      status = CASE r.k WHEN 'ingested' THEN 'ingested' WHEN 'failed' THEN 'failed' ELSE a.status END,
      etag = CASE r.k WHEN 'ingested' THEN r.e WHEN 'checked' THEN coalesce(r.e, a.etag) ELSE a.etag END,
      content_type = CASE WHEN r.k = 'ingested' THEN r.ct ELSE a.content_type END,
      width = CASE WHEN r.k = 'ingested' THEN r.w ELSE a.width END,
      height = CASE WHEN r.k = 'ingested' THEN r.h ELSE a.height END,
      byte_size = CASE WHEN r.k = 'ingested' THEN r.bs ELSE a.byte_size END,
      content_sha256 = CASE WHEN r.k = 'ingested' THEN r.sha ELSE a.content_sha256 END,
      storage_path = CASE WHEN r.k = 'ingested' THEN r.p ELSE a.storage_path END,
      attempts = a.attempts + r.n,
      last_error = r.err,
      last_checked_at = now(),
      updated_at = now()
    FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, k text, n int, e text, ct text, w int, h int, bs bigint, sha text, p text, err text)
    WHERE a.id = r.id`, [JSON.stringify(changes)]);
}
