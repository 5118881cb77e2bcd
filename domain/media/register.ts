// Media registration on the upsert path: the written items' URLs become assets, and only new or stale assets are queued for download.
import { newId } from '../../platform/ids.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { messageRow, writeOutbox } from '../events/outbox.ts';
import type { SqlExecutor } from '../events/outbox.ts';
import type { NormalizedItem } from '../items/payload.ts';
import type { WrittenRow } from '../items/store.ts';

/** A message on catalog.media.v1 (key = sourceUrlHash). */
export interface MediaJob {
  readonly catalogId: string;
  readonly sourceUrlHash: string;
  /** The URL to fetch: as the first item to name the asset gave it. */
  readonly url: string;
  /** False for a new asset; true for a known one whose refresh age passed (HEAD + If-None-Match first). */
  readonly refresh: boolean;
  /** The registering transaction's time (database clock, µs): a job older than the asset's last check is skipped. */
  readonly queuedAt: string;
  /** externalIds of the registering items that name the asset (at most MAX_EXTERNAL_IDS), for the events. */
  readonly externalIds: readonly string[];
}

// Events carry the ids the registering batch knew; a longer list belongs in a query, not an event.
const MAX_EXTERNAL_IDS = 100;
const HOUR_MS = 3_600_000;

let refreshAgeMs = 24 * HOUR_MS;

/** Set once by the composition root from MEDIA_REFRESH_AGE_HOURS (upserts run in api and consumer processes alike). */
export function configureMediaRegistration(options: { refreshAgeHours: number }): void {
  refreshAgeMs = options.refreshAgeHours * HOUR_MS;
}

interface Registered {
  source_url_hash: string;
  source_url: string;
  inserted: boolean;
  queued_at: string;
}

/**
 * Registers the media of the items that `writeItems` just created or updated (unchanged items
 * never get here), in the caller's transaction. A URL new to the catalog becomes a pending asset
 * and a job; a known asset is queued again only when it was last checked more than the refresh
 * age ago, and then claimed (updated_at) so a burst of changed items queues it once. The job
 * goes through the outbox with the items, so a rolled-back upsert queues nothing.
 */
export async function registerMedia(
  execute: SqlExecutor,
  catalogId: string,
  written: readonly WrittenRow[],
  items: readonly NormalizedItem[],
): Promise<void> {
  if (written.length === 0) return;
  const writtenKeys = new Set(written.map((w) => `${w.external_system}\u0000${w.external_id}`));
  const assets = new Map<string, { url: string; externalIds: string[] }>();
  for (const item of items) {
    if (item.media.length === 0 || !writtenKeys.has(`${item.externalSystem}\u0000${item.externalId}`)) continue;
    for (const m of item.media) {
      const asset = assets.get(m.sourceUrlHash);
      if (!asset) assets.set(m.sourceUrlHash, { url: m.url, externalIds: [item.externalId] });
      else if (asset.externalIds.length < MAX_EXTERNAL_IDS) asset.externalIds.push(item.externalId);
    }
  }
  if (assets.size === 0) return;
  // Sorted by hash: concurrent upserts lock shared asset rows in one order and cannot deadlock.
  const rows = [...assets].sort(([a], [b]) => (a < b ? -1 : 1)).map(([hash, a]) => ({ id: newId(), h: hash, u: a.url }));
  const registered = await execute(
    `INSERT INTO media_assets AS a (id, catalog_id, source_url, source_url_hash)
      SELECT r.id, ?, r.u, r.h FROM jsonb_to_recordset(?::jsonb) AS r(id uuid, h text, u text)
      ON CONFLICT ON CONSTRAINT media_assets_catalog_hash_key DO UPDATE SET updated_at = now()
        WHERE coalesce(a.last_checked_at, a.created_at) < now() - ? * interval '1 millisecond'
          AND a.updated_at < now() - ? * interval '1 millisecond'
      RETURNING a.source_url_hash, a.source_url, (xmax = 0) AS inserted,
        to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS queued_at`,
    [catalogId, JSON.stringify(rows), refreshAgeMs, refreshAgeMs],
  ) as Registered[];
  if (registered.length === 0) return;
  await writeOutbox(execute, registered.map((r) => {
    const job: MediaJob = {
      catalogId,
      sourceUrlHash: r.source_url_hash,
      url: r.inserted ? assets.get(r.source_url_hash)!.url : r.source_url,
      refresh: !r.inserted,
      queuedAt: r.queued_at,
      externalIds: assets.get(r.source_url_hash)!.externalIds,
    };
    return messageRow({ topic: TOPICS.media, key: r.source_url_hash, body: job });
  }));
}
