// The asset store: every statement on media_assets (registration on the upsert path, the consumer's loads and recorded changes).
import { prepared, query } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import type { Rendition } from './renditions.ts';

// Item writes and changes of an asset's state take turns (docs/design.md, "The changelog converges"):
// a transaction-level advisory lock of this class on the asset's bucket, shared by the writes of
// items that name the asset (before or after), exclusive for a change of its state. Buckets bound
// the locks a transaction holds, whatever its number of assets.
const ASSET_STATE_LOCK = 0x61737374;
const bucketOf = (catalogId: string, sourceUrlHash: string) => `hashtext(${catalogId}::text || (${sourceUrlHash})) & 255`;

// Buckets in ascending order, so two lockers never wait for each other in opposite orders.
const LOCK_NAMED_ASSETS = prepared(`
    SELECT count(pg_advisory_xact_lock_shared(${ASSET_STATE_LOCK}, b.b)) FROM (
      SELECT ${bucketOf('$1::uuid', 'h')} AS b FROM unnest($2::text[]) AS h
      UNION
      SELECT ${bucketOf('$1::uuid', "m ->> 'sourceUrlHash'")}
        FROM unnest($3::text[], $4::text[]) AS t(s, e)
        CROSS JOIN LATERAL (SELECT i.media FROM items i WHERE i.catalog_id = $1 AND i.external_system = t.s AND i.external_id = t.e LIMIT 1) i
        CROSS JOIN jsonb_array_elements(i.media) AS m
      ORDER BY 1) AS b`);

/**
 * For a write of items, before the statement that writes them or their changelog records: waits
 * for the state changes in flight of the assets they name (`sourceUrlHashes`, and the media the
 * stored items of `identities` name), and keeps new ones waiting until the caller's transaction
 * ends, so the write reads every asset's state as last committed and the change sees the write.
 */
export async function lockNamedAssets(
  db: Db, catalogId: string, sourceUrlHashes: readonly string[], identities: ReadonlyArray<readonly [string, string]>,
): Promise<void> {
  await query(db, 'media.lock_named_assets', LOCK_NAMED_ASSETS, [catalogId, [...new Set(sourceUrlHashes)], identities.map(([s]) => s), identities.map(([, e]) => e)]);
}

/** For a change of assets' states, before it: waits for the writes in flight of items that name them (lockNamedAssets). */
export async function lockAssetChanges(db: Db, assets: ReadonlyArray<{ catalogId: string; sourceUrlHash: string }>): Promise<void> {
  await query(db, 'media.lock_asset_changes', `SELECT count(pg_advisory_xact_lock(${ASSET_STATE_LOCK}, b.b)) FROM (
      SELECT DISTINCT ${bucketOf('c', 'h')} AS b FROM unnest($1::uuid[], $2::text[]) AS a(c, h) ORDER BY 1) AS b`,
  [assets.map((a) => a.catalogId), assets.map((a) => a.sourceUrlHash)]);
}

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
  return query<RegisteredAsset>(db, 'media.register_assets',
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
  readonly contentType: string | null;
  readonly storagePath: string | null;
  /** Null until made (or for an asset ingested before renditions existed). */
  readonly renditions: readonly Rendition[] | null;
  /** Checked at or after the job was queued: a redelivered or superseded job has nothing to do. */
  readonly doneForJob: boolean;
}

/** The assets of some jobs (`queuedAt`: when each was queued) in one query. */
export async function findAssets(
  db: Db, jobs: ReadonlyArray<{ catalogId: string; sourceUrlHash: string; queuedAt: string }>,
): Promise<StoredAsset[]> {
  const rows = await query<{
    id: string; catalog_id: string; source_url: string; source_url_hash: string; status: StoredAsset['status'];
    etag: string | null; content_sha256: string | null; content_type: string | null; storage_path: string | null;
    renditions: Rendition[] | null; done: boolean;
  }>(db,
    `SELECT a.id, a.catalog_id, a.source_url, a.source_url_hash, a.status, a.etag, a.content_sha256, a.content_type,
        a.storage_path, a.renditions, coalesce(a.last_checked_at >= k.q, false) AS done
      FROM jsonb_to_recordset($1::jsonb) AS k(c uuid, h text, q timestamptz)
      JOIN media_assets a ON a.catalog_id = k.c AND a.source_url_hash = k.h`,
    [JSON.stringify(jobs.map((j) => ({ c: j.catalogId, h: j.sourceUrlHash, q: j.queuedAt })))]);
  return rows.map((row) => ({
    id: row.id, catalogId: row.catalog_id, sourceUrl: row.source_url, sourceUrlHash: row.source_url_hash,
    status: row.status, etag: row.etag, contentSha256: row.content_sha256, contentType: row.content_type,
    storagePath: row.storage_path, renditions: row.renditions, doneForJob: row.done,
  }));
}

/**
 * The consumer holding these assets' jobs (taken from Kafka, their offsets committed, not yet
 * done) keeps them for `seconds` more. A lease its job's recorded change has just ended is left
 * alone.
 */
export async function renewLeases(db: Db, ids: readonly string[], seconds: number): Promise<void> {
  if (ids.length === 0) return;
  await query(db, 'media.renew_leases', `UPDATE media_assets SET leased_until = now() + $2 * interval '1 second'
    WHERE id = ANY($1::uuid[]) AND leased_until IS NOT NULL`, [ids, seconds]);
}

// A job held for its catalog's import (docs/design.md, "Images wait for their catalog's import"):
// a lease that never lapses, ended by takeJobsToQueue once no import of the catalog runs.
const HELD_FOR_IMPORT = `'infinity'::timestamptz`;
const IMPORTING = (asset: string) => `EXISTS (SELECT 1 FROM import_jobs j
  WHERE j.catalog_id = ${asset}.catalog_id AND j.status = 'processing' AND NOT j.dry_run)`;

/**
 * Leases the assets of jobs a consumer takes for `seconds` unless their catalog runs an import
 * that writes: those of `holdable` are held for it instead, and returned, for the caller to leave
 * them; takeJobsToQueue queues them again once the import has ended.
 */
export async function leaseOrHoldAssets(db: Db, ids: readonly string[], holdable: ReadonlySet<string>, seconds: number): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await query<{ id: string; held: boolean }>(db, 'media.lease_or_hold_assets', `UPDATE media_assets a SET leased_until = CASE
      WHEN a.id = ANY($2::uuid[]) AND ${IMPORTING('a')} THEN ${HELD_FOR_IMPORT} ELSE now() + $3 * interval '1 second' END
    WHERE a.id = ANY($1::uuid[])
    RETURNING a.id, a.leased_until = ${HELD_FOR_IMPORT} AS held`, [ids, [...holdable], seconds]);
  return new Set(rows.filter((row) => row.held).map((row) => row.id));
}

/** Ends the leases of jobs a stopping consumer gives up before starting them: they are swept at once. */
export async function releaseAssets(db: Db, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await query(db, 'media.release_assets', `UPDATE media_assets SET leased_until = now() WHERE id = ANY($1::uuid[]) AND leased_until IS NOT NULL`, [ids]);
}

/** An asset whose job is queued again. */
export interface RequeuedAsset {
  readonly catalog_id: string;
  readonly source_url_hash: string;
  readonly source_url: string;
  readonly status: StoredAsset['status'];
  readonly queued_at: string;
  /** Its job was held for its catalog's import, now ended; otherwise its holder let the lease lapse (it crashed, or gave the job up). */
  readonly held: boolean;
}

/**
 * Takes up to `limit` assets whose job must be queued again (skipping rows another sweeper
 * holds) and marks them queued now: a lapsed lease, or a job held for an import that has ended.
 */
export function takeJobsToQueue(db: Db, limit: number): Promise<RequeuedAsset[]> {
  return query<RequeuedAsset>(db, 'media.take_jobs_to_queue', `UPDATE media_assets a SET leased_until = NULL, updated_at = now()
    FROM (SELECT m.id, m.leased_until = ${HELD_FOR_IMPORT} AS held FROM media_assets m
      WHERE m.leased_until < now() OR (m.leased_until = ${HELD_FOR_IMPORT} AND NOT ${IMPORTING('m')})
      ORDER BY m.leased_until LIMIT $1 FOR UPDATE OF m SKIP LOCKED) due
    WHERE a.id = due.id
    RETURNING a.catalog_id, a.source_url_hash, a.source_url, a.status, due.held,
      to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS queued_at`, [limit]);
}

/** The rendition sets made so far for these bytes, under any URL or catalog (at most a few). */
export async function renditionsOfContent(db: Db, contentSha256: string): Promise<Rendition[][]> {
  const rows = await query<{ renditions: Rendition[] }>(db, 'media.renditions_of_content',
    `SELECT DISTINCT renditions FROM media_assets WHERE content_sha256 = $1 AND renditions IS NOT NULL LIMIT 8`, [contentSha256]);
  return rows.map((row) => row.renditions);
}

/**
 * One asset's change as written: `k` is its kind (`ingested`, `checked`, `failed`, or
 * `refresh_failed` for an ingested asset whose refresh failed: it keeps its image); `n` attempts
 * to add; the image's columns for `ingested`, the ETag for `checked`, the reason and message for
 * the failures; `r`, the renditions, for `ingested` and for a `checked` asset that lacked them.
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
  readonly r?: readonly Rendition[];
  readonly fr?: string;
  readonly err?: string;
}

/** What a change left on its asset, for the events that report it. */
export interface WrittenAsset {
  readonly id: string;
  /** The status and content the row had when this write locked it: what the change really changed. */
  readonly was: StoredAsset['status'];
  readonly had: string | null;
  readonly attempts: number;
  /** last_checked_at as the API shows it (ISO 8601, milliseconds). */
  readonly checked_at: string;
}

/** Writes a group of changes (one per asset) in one statement; each asset is marked checked now. */
export function writeAssetChanges(db: Db, changes: readonly AssetChange[]): Promise<WrittenAsset[]> {
  // The rows are locked first, so `was` and `had` are the last committed state, whatever a job
  // decided from: two runs of one job (at-least-once) report a change once.
  return query<WrittenAsset>(db, 'media.write_asset_changes', `WITH r AS (
      SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, k text, n int, e text, ct text, w int, h int, bs bigint, sha text, p text, r jsonb, fr text, err text)),
    locked AS (SELECT a.id, a.status AS was, a.content_sha256 AS had FROM media_assets a JOIN r ON r.id = a.id FOR UPDATE OF a)
    UPDATE media_assets a SET
      status = CASE r.k WHEN 'ingested' THEN 'ingested' WHEN 'failed' THEN 'failed' ELSE a.status END,
      etag = CASE r.k WHEN 'ingested' THEN r.e WHEN 'checked' THEN coalesce(r.e, a.etag) ELSE a.etag END,
      content_type = CASE WHEN r.k = 'ingested' THEN r.ct ELSE a.content_type END,
      width = CASE WHEN r.k = 'ingested' THEN r.w ELSE a.width END,
      height = CASE WHEN r.k = 'ingested' THEN r.h ELSE a.height END,
      byte_size = CASE WHEN r.k = 'ingested' THEN r.bs ELSE a.byte_size END,
      content_sha256 = CASE WHEN r.k = 'ingested' THEN r.sha ELSE a.content_sha256 END,
      storage_path = CASE WHEN r.k = 'ingested' THEN r.p ELSE a.storage_path END,
      renditions = CASE WHEN r.k = 'ingested' OR r.r IS NOT NULL THEN r.r ELSE a.renditions END,
      attempts = a.attempts + r.n,
      failure_reason = r.fr,
      last_error = r.err,
      leased_until = NULL,
      last_checked_at = now(),
      updated_at = now()
    FROM r JOIN locked l ON l.id = r.id
    WHERE a.id = r.id
    RETURNING a.id, l.was, l.had, a.attempts, to_char(a.last_checked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS checked_at`, [JSON.stringify(changes)]);
}
