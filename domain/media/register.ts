// Media registration on the upsert path: the written items' URLs become assets, and only new or stale assets are queued for download.
import type { Db } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { messageRow, writeOutbox } from '../events/outbox.ts';
import type { NormalizedItem } from '../items/normalized-item.ts';
import type { WrittenRow } from '../items/store.ts';
import { registerAssets } from './asset-store.ts';

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
  /** Set by the consumer, never sent: the trace context the job's work continues. */
  readonly traceparent?: string;
}

// Events carry the ids the registering batch knew; a longer list belongs in a query, not an event.
const MAX_EXTERNAL_IDS = 100;

/**
 * Registers the media of the items that `writeItems` just created or updated (unchanged items
 * never get here), in the caller's transaction. A URL new to the catalog becomes a pending asset
 * and a job; a known asset is queued again only when it was last checked more than the refresh
 * age ago, and then claimed (updated_at) so a burst of changed items queues it once. The job
 * goes through the outbox with the items, so a rolled-back upsert queues nothing.
 */
export async function registerMedia(
  db: Db,
  catalogId: string,
  written: readonly WrittenRow[],
  items: readonly NormalizedItem[],
  /** MEDIA_REFRESH_AGE_HOURS in ms: a known asset last checked longer ago is queued again. */
  refreshAgeMs: number,
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
  const rows = [...assets].sort(([a], [b]) => (a < b ? -1 : 1)).map(([hash, a]) => ({ id: newId(), hash, url: a.url }));
  const registered = await registerAssets(db, catalogId, rows, refreshAgeMs);
  if (registered.length === 0) return;
  await writeOutbox(db, registered.map((r) => {
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
