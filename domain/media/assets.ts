// The media asset record as the consumer reads and writes it: loaded per batch, changes group-committed, each with its media.* event in the same transaction.
import { sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { groupCommit } from '../../platform/group-commit.ts';
import { domainEvent, eventRow, mediaEventKey, writeOutbox } from '../events/outbox.ts';
import type { DomainEvent, OutboxRow } from '../events/outbox.ts';
import { appendItemRecords } from '../items/changelog.ts';
import type { RecordedItem } from '../items/changelog.ts';
import { renditionView } from '../items/view.ts';
import { findAssets, lockAssetChanges, writeAssetChanges } from './asset-store.ts';
import type { AssetChange, StoredAsset, WrittenAsset } from './asset-store.ts';
import { normalizeMediaUrl } from './source-url.ts';
import type { MediaJob } from './register.ts';
import type { Rendition } from './renditions.ts';

/** The reasons of media.ingestion_failed (contract: MediaIngestionFailedEvent.data.reason). */
export type FailureReason = 'not_found' | 'not_an_image' | 'too_large' | 'timeout' | 'refused' | 'undecodable' | 'http_error';

export type MediaAsset = StoredAsset;

export interface IngestedImage {
  readonly etag: string | null;
  readonly contentType: string;
  readonly width: number;
  readonly height: number;
  readonly byteSize: number;
  readonly contentSha256: string;
  readonly storagePath: string;
  readonly renditions: readonly Rendition[];
}

/** `catalogId:sourceUrlHash`: an asset's identity (the same URL in two catalogs is two assets). */
export const assetKey = (job: { catalogId: string; sourceUrlHash: string }) => `${job.catalogId}:${job.sourceUrlHash}`;

/** The assets of some jobs in one query, by assetKey. */
export async function loadAssets(db: Db, jobs: readonly MediaJob[]): Promise<Map<string, MediaAsset>> {
  return new Map((await findAssets(db, jobs)).map((asset) => [assetKey(asset), asset]));
}

type Change =
  | { kind: 'ingested'; asset: MediaAsset; job: MediaJob; image: IngestedImage; attempts: number }
  | { kind: 'checked'; asset: MediaAsset; etag: string | null; attempts: number; renditions?: readonly Rendition[] }
  | { kind: 'failed'; asset: MediaAsset; job: MediaJob; failure: { reason: FailureReason; message: string }; attempts: number };

export interface AssetRecorder {
  /** New bytes stored: the asset becomes (or stays) ingested with them, and media.ingested goes out. */
  ingested(asset: MediaAsset, job: MediaJob, image: IngestedImage, attempts: number): Promise<void>;
  /**
   * Checked, nothing new (304, same ETag, or the same bytes under a new ETag): the stored asset
   * stays; `renditions`, when given, replace ones missing or made for other sizes.
   */
  checked(asset: MediaAsset, etag: string | null, attempts: number, renditions?: readonly Rendition[]): Promise<void>;
  /**
   * Failed for good (after the fetcher's retries). An asset that never arrived becomes `failed`
   * and media.ingestion_failed goes out; an ingested asset whose refresh failed keeps its stored
   * image (still the last good copy) and only records the error.
   */
  failed(asset: MediaAsset, job: MediaJob, failure: { reason: FailureReason; message: string }, attempts: number): Promise<void>;
}

// The event's `url` is the normalized URL (contract); source_url is what the first item gave.
const withIds = (job: MediaJob) => (job.externalIds.length > 0 ? { externalIds: [...job.externalIds] } : {});

/**
 * The event a change reports, if any: media.ingested, or media.ingestion_failed for an asset that
 * never arrived; with the asset's state as written (`written`), so an event says what a read does.
 */
function eventOf(change: Change, written: WrittenAsset | undefined): DomainEvent | undefined {
  const { asset } = change;
  // Judged by the row as this write found it, not by the state the job decided from.
  if (change.kind === 'ingested' && written?.was === 'ingested' && written.had === change.image.contentSha256) return undefined;
  if (change.kind === 'failed' && written !== undefined && written.was === 'ingested') return undefined;
  const base = { catalogId: asset.catalogId, resourceId: asset.sourceUrlHash };
  const url = normalizeMediaUrl(asset.sourceUrl);
  if (change.kind === 'ingested') {
    const { image } = change;
    return domainEvent({ ...base, type: 'media.ingested', data: {
      sourceUrlHash: asset.sourceUrlHash, url, assetId: asset.id, contentType: image.contentType, width: image.width, height: image.height,
      byteSize: image.byteSize, contentSha256: image.contentSha256, renditions: image.renditions.map(renditionView), ...withIds(change.job),
    } });
  }
  if (change.kind === 'failed' && asset.status !== 'ingested') {
    return domainEvent({ ...base, type: 'media.ingestion_failed', data: {
      sourceUrlHash: asset.sourceUrlHash, url, assetId: asset.id, reason: change.failure.reason, message: change.failure.message.slice(0, 2000),
      ...(written ? { attempts: Math.max(written.attempts, 1), lastAttemptAt: written.checked_at } : {}), ...withIds(change.job),
    } });
  }
  return undefined;
}

// A media event lists this many of its items at most, so that it stays small whatever the
// number of items naming its image (`itemCount` and GET /items?sourceUrlHash= give the rest).
const EVENT_ITEMS = 100;

const byIdentity = (a: RecordedItem, b: RecordedItem) =>
  a.externalSystem < b.externalSystem ? -1 : a.externalSystem > b.externalSystem ? 1 : a.externalId < b.externalId ? -1 : a.externalId > b.externalId ? 1 : 0;

/**
 * The changelog records of the items naming the images the events report (their media entries
 * changed state), appended in `tx`; each event's outbox row, with `items`: the first of those
 * items by identity, and `itemCount`: how many they are.
 */
async function reportWithItems(tx: Db, events: readonly DomainEvent[]): Promise<OutboxRow[]> {
  if (events.length === 0) return [];
  const reported = JSON.stringify(events.map((event) => ({ c: event.catalogId, h: event.resourceId, ev: event.id, t: event.type })));
  const recorded = await appendItemRecords(tx, {
    from: sql`jsonb_to_recordset(${reported}::jsonb) AS r(c uuid, h text, ev uuid, t text)
      JOIN items i ON i.catalog_id = r.c AND jsonb_array_length(i.media) > 0
        AND i.media @> jsonb_build_array(jsonb_build_object('sourceUrlHash', r.h))`,
    eventId: sql`r.ev`,
    eventType: sql`r.t`,
  });
  const itemsOf = Map.groupBy(recorded, (item) => item.eventId);
  return events.map((event) => {
    const items = itemsOf.get(event.id) ?? [];
    const listed = items.sort(byIdentity).slice(0, EVENT_ITEMS).map(({ externalSystem, externalId }) => ({ externalSystem, externalId }));
    return eventRow({ ...event, data: { ...event.data, items: listed, itemCount: items.length } }, mediaEventKey(event.catalogId, event.resourceId));
  });
}

/** One row of the single UPDATE a group makes; absent columns keep their value unless the kind resets them. */
function rowOf(change: Change): AssetChange {
  const base = { id: change.asset.id, k: change.kind, n: change.attempts };
  if (change.kind === 'ingested') {
    const i = change.image;
    return { ...base, e: i.etag, ct: i.contentType, w: i.width, h: i.height, bs: i.byteSize, sha: i.contentSha256, p: i.storagePath, r: i.renditions };
  }
  if (change.kind === 'checked') return { ...base, e: change.etag, ...(change.renditions ? { r: change.renditions } : {}) };
  return { ...base, k: change.asset.status === 'ingested' ? 'refresh_failed' : 'failed', fr: change.failure.reason, err: change.failure.message.slice(0, 2000) };
}

/**
 * Changes are group-committed: those that arrive while the previous group is being written (at
 * most `maxGroup`) are written by the next transaction (one UPDATE, one outbox insert) instead
 * of four round trips each. A change's promise settles when its group has committed, so a Kafka
 * offset is never committed ahead of the asset it stands for; a failed group fails all its
 * changes, and their batches are delivered again.
 */
export function createAssetRecorder(db: Db, options: { maxGroup?: number } = {}): AssetRecorder {
  const submit = groupCommit<Change, void>(async (_key, changes) => {
    // Two changes to one asset in a group cannot happen (jobs of an asset run in order), but
    // an UPDATE … FROM must not see one row twice: the later change wins.
    const rows = [...new Map(changes.map((change) => [change.asset.id, rowOf(change)])).values()];
    await db.transactional(async (tx) => {
      // The items' changelog records below then see every write of an item that names these assets.
      await lockAssetChanges(tx, changes.map((change) => change.asset));
      const written = new Map((await writeAssetChanges(tx, rows)).map((w) => [w.id, w]));
      // One change an asset (the later wins, as in `rows`): one event an asset.
      const last = [...new Map(changes.map((change) => [change.asset.id, change])).values()];
      const events = last.map((change) => eventOf(change, written.get(change.asset.id))).filter((e): e is DomainEvent => e !== undefined);
      await writeOutbox(tx, await reportWithItems(tx, events));
    });
    return changes.map(() => undefined);
  }, { maxGroup: options.maxGroup ?? 100 });
  const record = (change: Change) => submit('assets', change);

  return {
    ingested: (asset, job, image, attempts) => record({ kind: 'ingested', asset, job, image, attempts }),
    checked: (asset, etag, attempts, renditions) => record({ kind: 'checked', asset, etag, attempts, ...(renditions ? { renditions } : {}) }),
    failed: (asset, job, failure, attempts) => record({ kind: 'failed', asset, job, failure, attempts }),
  };
}
