// The media asset record as the consumer reads and writes it: loaded per batch, changes written in groups, each with its media.* event in the same transaction.
import type pg from 'pg';
import { domainEvent, eventRow, writeOutbox } from '../events/outbox.ts';
import type { OutboxRow } from '../events/outbox.ts';
import { normalizeMediaUrl } from './source-url.ts';
import type { MediaJob } from './register.ts';

/** The reasons of media.ingestion_failed (contract: MediaIngestionFailedEvent.data.reason). */
export type FailureReason = 'not_found' | 'not_an_image' | 'too_large' | 'timeout' | 'refused' | 'undecodable' | 'http_error';

export interface MediaAsset {
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

export interface IngestedImage {
  readonly etag: string | null;
  readonly contentType: string;
  readonly width: number;
  readonly height: number;
  readonly byteSize: number;
  readonly contentSha256: string;
  readonly storagePath: string;
}

/** `catalogId:sourceUrlHash`: an asset's identity (the same URL in two catalogs is two assets). */
export const assetKey = (job: { catalogId: string; sourceUrlHash: string }) => `${job.catalogId}:${job.sourceUrlHash}`;

/** The assets of some jobs in one query, by assetKey. */
export async function loadAssets(pool: pg.Pool, jobs: readonly MediaJob[]): Promise<Map<string, MediaAsset>> {
  const keys = JSON.stringify(jobs.map((j) => ({ c: j.catalogId, h: j.sourceUrlHash, q: j.queuedAt })));
  const { rows } = await pool.query(
    `SELECT a.id, a.catalog_id, a.source_url, a.source_url_hash, a.status, a.etag, a.content_sha256,
        coalesce(a.last_checked_at >= k.q, false) AS done
      FROM jsonb_to_recordset($1::jsonb) AS k(c uuid, h text, q timestamptz)
      JOIN media_assets a ON a.catalog_id = k.c AND a.source_url_hash = k.h`,
    [keys],
  );
  return new Map(rows.map((row) => [assetKey({ catalogId: row.catalog_id, sourceUrlHash: row.source_url_hash }), {
    id: row.id, catalogId: row.catalog_id, sourceUrl: row.source_url, sourceUrlHash: row.source_url_hash,
    status: row.status, etag: row.etag, contentSha256: row.content_sha256, doneForJob: row.done,
  }]));
}

type Change =
  | { kind: 'ingested'; asset: MediaAsset; job: MediaJob; image: IngestedImage; attempts: number }
  | { kind: 'checked'; asset: MediaAsset; etag: string | null; attempts: number }
  | { kind: 'failed'; asset: MediaAsset; job: MediaJob; failure: { reason: FailureReason; message: string }; attempts: number };

export interface AssetRecorder {
  /** New bytes stored: the asset becomes (or stays) ingested with them, and media.ingested goes out. */
  ingested(asset: MediaAsset, job: MediaJob, image: IngestedImage, attempts: number): Promise<void>;
  /** Checked, nothing new (304, same ETag, or the same bytes under a new ETag): the stored asset stays. */
  checked(asset: MediaAsset, etag: string | null, attempts: number): Promise<void>;
  /**
   * Failed for good (after the fetcher's retries). An asset that never arrived becomes `failed`
   * and media.ingestion_failed goes out; an ingested asset whose refresh failed keeps its stored
   * image (still the last good copy) and only records the error.
   */
  failed(asset: MediaAsset, job: MediaJob, failure: { reason: FailureReason; message: string }, attempts: number): Promise<void>;
}

// The event's `url` is the normalized URL (contract); source_url is what the first item gave.
const withIds = (job: MediaJob) => (job.externalIds.length > 0 ? { externalIds: [...job.externalIds] } : {});

function eventOf(change: Change): OutboxRow | undefined {
  const { asset } = change;
  const base = { catalogId: asset.catalogId, resourceId: asset.sourceUrlHash };
  const url = normalizeMediaUrl(asset.sourceUrl);
  if (change.kind === 'ingested') {
    const { image } = change;
    return eventRow(domainEvent({ ...base, type: 'media.ingested', data: {
      sourceUrlHash: asset.sourceUrlHash, url, contentType: image.contentType, width: image.width, height: image.height, byteSize: image.byteSize, ...withIds(change.job),
    } }));
  }
  if (change.kind === 'failed' && asset.status !== 'ingested') {
    return eventRow(domainEvent({ ...base, type: 'media.ingestion_failed', data: {
      sourceUrlHash: asset.sourceUrlHash, url, reason: change.failure.reason, message: change.failure.message, ...withIds(change.job),
    } }));
  }
  return undefined;
}

/** One row of the single UPDATE a group makes; null columns keep their value unless the kind resets them. */
function rowOf(change: Change) {
  const base = { id: change.asset.id, k: change.kind, n: change.attempts };
  if (change.kind === 'ingested') {
    const i = change.image;
    return { ...base, e: i.etag, ct: i.contentType, w: i.width, h: i.height, bs: i.byteSize, sha: i.contentSha256, p: i.storagePath };
  }
  if (change.kind === 'checked') return { ...base, e: change.etag };
  return { ...base, k: change.asset.status === 'ingested' ? 'refresh_failed' : 'failed', err: `${change.failure.reason}: ${change.failure.message}`.slice(0, 2000) };
}

const UPDATE = `UPDATE media_assets a SET
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
  WHERE a.id = r.id`;

/**
 * Changes are grouped: those that arrive within `delayMs` of each other (at most `maxGroup`)
 * are written by one transaction (one UPDATE, one outbox insert), instead of four round trips
 * each. A change's promise settles when its group has committed, so a Kafka offset is never
 * committed ahead of the asset it stands for.
 */
export function createAssetRecorder(pool: pg.Pool, options: { delayMs?: number; maxGroup?: number } = {}): AssetRecorder {
  const delayMs = options.delayMs ?? 50;
  const maxGroup = options.maxGroup ?? 100;
  let group: Array<{ change: Change; done: () => void; fail: (error: unknown) => void }> = [];
  let timer: NodeJS.Timeout | undefined;

  async function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    const writing = group;
    group = [];
    if (writing.length === 0) return;
    // Two changes to one asset in a group cannot happen (jobs of an asset run in order), but
    // an UPDATE … FROM must not see one row twice: the later change wins.
    const rows = [...new Map(writing.map((w) => [w.change.asset.id, rowOf(w.change)])).values()];
    const events = writing.map((w) => eventOf(w.change)).filter((e): e is OutboxRow => e !== undefined);
    const client = await pool.connect().catch((error: unknown) => {
      for (const w of writing) w.fail(error);
    });
    if (!client) return;
    try {
      await client.query('BEGIN');
      await client.query(UPDATE, [JSON.stringify(rows)]);
      await writeOutbox((sql, params) => client.query(sql, params), events, { placeholders: 'dollar' });
      await client.query('COMMIT');
      for (const w of writing) w.done();
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      for (const w of writing) w.fail(error);
    } finally {
      client.release();
    }
  }

  const record = (change: Change) => new Promise<void>((done, fail) => {
    group.push({ change, done, fail });
    if (group.length >= maxGroup) void flush();
    else timer ??= setTimeout(() => void flush(), delayMs);
  });

  return {
    ingested: (asset, job, image, attempts) => record({ kind: 'ingested', asset, job, image, attempts }),
    checked: (asset, etag, attempts) => record({ kind: 'checked', asset, etag, attempts }),
    failed: (asset, job, failure, attempts) => record({ kind: 'failed', asset, job, failure, attempts }),
  };
}
