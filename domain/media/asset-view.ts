// The asset API's reads and its refresh: one asset of a catalog with its items, and a check queued now.
import type { MediaAsset } from '../../generated/client.ts';
import type { Db } from '../../platform/db/sql.ts';
import { query } from '../../platform/db/sql.ts';
import { notFound } from '../../platform/errors.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { messageRow, writeOutbox } from '../events/outbox.ts';
import { isoTime, renditionView } from '../items/view.ts';
import type { MediaJob } from './register.ts';
import type { Rendition } from './renditions.ts';
import { normalizeMediaUrl } from './source-url.ts';

// The items listed on an asset; `itemCount` says how many there are in all.
const ITEMS_SHOWN = 100;

interface AssetRow {
  id: string; source_url: string; source_url_hash: string; status: MediaAsset['status']; content_type: string | null;
  width: number | null; height: number | null; byte_size: string | null; content_sha256: string | null; etag: string | null;
  renditions: Rendition[] | null; failure_reason: NonNullable<MediaAsset['failure']>['reason'] | null; last_error: string | null;
  attempts: number; last_checked_at: string | null; created_at: string;
  items: Array<{ externalSystem: string; externalId: string }>; item_count: number;
}

// The items naming the asset go through items_media_idx (jsonb_path_ops containment).
const ASSET_SELECT = `
SELECT a.id, a.source_url, a.source_url_hash, a.status, a.content_type, a.width, a.height, a.byte_size, a.content_sha256,
  a.etag, a.renditions, a.failure_reason, a.last_error, a.attempts,
  CASE WHEN a.last_checked_at IS NULL THEN NULL ELSE ${isoTime('a.last_checked_at')} END AS last_checked_at,
  ${isoTime('a.created_at')} AS created_at,
  coalesce((SELECT jsonb_agg(jsonb_build_object('externalSystem', n.external_system, 'externalId', n.external_id)
      ORDER BY n.external_system, n.external_id)
    FROM (SELECT i.external_system, i.external_id FROM items i
      WHERE i.catalog_id = a.catalog_id AND jsonb_array_length(i.media) > 0
        AND i.media @> jsonb_build_array(jsonb_build_object('sourceUrlHash', a.source_url_hash))
      ORDER BY i.external_system, i.external_id LIMIT ${ITEMS_SHOWN}) n), '[]'::jsonb) AS items,
  (SELECT count(*)::int FROM items i WHERE i.catalog_id = a.catalog_id AND jsonb_array_length(i.media) > 0
    AND i.media @> jsonb_build_array(jsonb_build_object('sourceUrlHash', a.source_url_hash))) AS item_count
FROM media_assets a
WHERE a.catalog_id = $1 AND a.id = $2`;

function assetView(row: AssetRow): MediaAsset {
  const failed = row.failure_reason !== null && row.status !== 'pending';
  return {
    assetId: row.id,
    url: normalizeMediaUrl(row.source_url),
    sourceUrlHash: row.source_url_hash,
    status: row.status,
    contentType: row.content_type,
    width: row.width,
    height: row.height,
    byteSize: row.byte_size === null ? null : Number(row.byte_size),
    contentSha256: row.content_sha256,
    etag: row.etag,
    storedUrl: null,
    renditions: (row.renditions ?? []).map(renditionView),
    failure: failed ? { reason: row.failure_reason!, message: row.last_error ?? '', attempts: Math.max(row.attempts, 1), lastAttemptAt: row.last_checked_at ?? row.created_at } : null,
    attempts: row.attempts,
    lastCheckedAt: row.last_checked_at,
    createdAt: row.created_at,
    items: row.items,
    itemCount: row.item_count,
  };
}

/** The asset of the catalog (404 for another catalog's, as for a missing one), its addresses not yet signed. */
export async function readAsset(db: Db, catalogId: string, assetId: string): Promise<MediaAsset> {
  const [row] = await query<AssetRow>(db, 'media.read_asset', ASSET_SELECT, [catalogId, assetId]);
  if (!row) throw notFound(`Media asset ${assetId}`);
  return assetView(row);
}

/**
 * Queues a check of the asset now (through the outbox, in one transaction with the claim), unless
 * one is queued and not yet done: it was claimed (updated_at) after its last check, or it was
 * never checked (its first download is on its way). Returns the asset as it is.
 */
export async function refreshAsset(db: Db, catalogId: string, assetId: string): Promise<MediaAsset> {
  return db.transactional(async (tx) => {
    const [claimed] = await query<{ source_url: string; source_url_hash: string; status: string; queued_at: string }>(tx, 'media.claim_refresh',
      `UPDATE media_assets SET updated_at = clock_timestamp()
        WHERE catalog_id = $1 AND id = $2 AND last_checked_at IS NOT NULL AND updated_at <= last_checked_at
        RETURNING source_url, source_url_hash, status,
          to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS queued_at`, [catalogId, assetId]);
    if (claimed) {
      const job: MediaJob = {
        catalogId, sourceUrlHash: claimed.source_url_hash, url: claimed.source_url, refresh: claimed.status === 'ingested',
        queuedAt: claimed.queued_at, externalIds: [],
      };
      await writeOutbox(tx, [messageRow({ topic: TOPICS.media, key: claimed.source_url_hash, body: job })]);
    }
    return readAsset(tx, catalogId, assetId);
  });
}
