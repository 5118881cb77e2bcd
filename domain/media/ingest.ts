// One media job: download (or re-check with HEAD + If-None-Match), inspect, store content-addressed, record the asset and its event.
import { FetchFailure } from '../../platform/outbound/image-fetcher.ts';
import type { FetchResult, ImageFetcher } from '../../platform/outbound/image-fetcher.ts';
import type { AssetRecorder, FailureReason, MediaAsset } from './assets.ts';
import { ImageRejected, inspectImage } from './image.ts';
import type { MediaStore } from './media-store.ts';
import type { MediaJob } from './register.ts';
import { matchesSpecs } from './renditions.ts';
import type { Rendition, RenditionMaker } from './renditions.ts';

export interface IngestDeps {
  readonly recorder: AssetRecorder;
  /**
   * Bounds the jobs in flight (MEDIA_CONCURRENCY) and the requests to one host
   * (MEDIA_HOST_CONCURRENCY); a job waiting for its host holds no slot of the total, and gives its
   * host slot back (`doneWithHost`) once its requests are over, before the image is worked on.
   */
  readonly throttle: <T>(host: string, work: (doneWithHost: () => void) => Promise<T>) => Promise<T>;
  readonly fetcher: ImageFetcher;
  readonly store: MediaStore;
  readonly renditions: RenditionMaker;
  /** A stored image's bytes, to make the renditions an asset lacks. */
  readonly readStored: (storagePath: string) => Promise<Buffer>;
}

/**
 * `ingested`: new bytes stored; `not_modified`: 304 or the same ETag; `unchanged`: a new ETag but
 * the same bytes; `failed`: for good, recorded; `skipped`: nothing to do (redelivered job, unknown asset).
 */
export type IngestOutcome = 'ingested' | 'not_modified' | 'unchanged' | 'failed' | 'skipped';

/** A failure that is the image's, not ours: recorded, never retried by the consumer. */
export function failureOf(error: unknown): { reason: FailureReason; message: string } | undefined {
  if (error instanceof ImageRejected) return { reason: error.reason, message: error.message };
  if (!(error instanceof FetchFailure)) return undefined;
  switch (error.kind) {
    case 'refused': return { reason: 'refused', message: error.message };
    case 'timeout': return { reason: 'timeout', message: error.message };
    case 'too_large': return { reason: 'too_large', message: error.message };
    case 'http_status': return { reason: error.status === 404 || error.status === 410 ? 'not_found' : 'http_error', message: error.message };
    default: return { reason: 'http_error', message: error.message };
  }
}

type Decision = { readonly outcome: Exclude<IngestOutcome, 'skipped'>; record(): Promise<void> };

/**
 * Handles one job, given its asset as loaded (loadAssets). The network and CPU part runs under
 * `deps.throttle`; recording (grouped with other jobs' records) waits outside it. Throws only for
 * what a retry of the message can fix (database, storage); everything about the image itself
 * ends as a recorded outcome.
 */
export async function ingestMedia(deps: IngestDeps, job: MediaJob, asset: MediaAsset | undefined): Promise<IngestOutcome> {
  if (!asset || asset.doneForJob) return 'skipped';
  const decision = await deps.throttle(new URL(sourceOf(job, asset)).host, (doneWithHost) => decide(deps, job, asset, doneWithHost));
  await decision.record();
  return decision.outcome;
}

// A pending asset is fetched from the URL its job gives (the first item's spelling); a known one from its own.
const sourceOf = (job: MediaJob, asset: MediaAsset) => (asset.status === 'pending' ? job.url : asset.sourceUrl);

/**
 * For an unchanged, ingested image whose renditions are missing or were made for other sizes
 * (MEDIA_RENDITIONS changed, or it was ingested before renditions existed): new ones from the
 * stored bytes; undefined when it has the configured ones.
 */
async function missingRenditions(deps: IngestDeps, asset: MediaAsset): Promise<Rendition[] | undefined> {
  if (asset.status !== 'ingested' || !asset.contentSha256 || !asset.storagePath || matchesSpecs(asset.renditions, deps.renditions.specs)) return undefined;
  const bytes = await deps.readStored(asset.storagePath);
  return deps.renditions.forImage(asset.contentSha256, bytes, await inspectImage(bytes, { decode: false }));
}

async function decide(deps: IngestDeps, job: MediaJob, asset: MediaAsset, doneWithHost: () => void): Promise<Decision> {
  const { recorder } = deps;
  let attempts = 0;
  const checked = async (etag: string | null, outcome: 'not_modified' | 'unchanged'): Promise<Decision> => {
    const renditions = await missingRenditions(deps, asset);
    return { outcome, record: () => recorder.checked(asset, etag, attempts, renditions) };
  };
  try {
    let ifNoneMatch: string | null = null;
    if (asset.status === 'ingested' && asset.etag !== null) {
      // Refresh: ask before downloading (spec "Media source" 2).
      const head = await headOrNull(deps.fetcher, asset.sourceUrl, asset.etag);
      attempts += head.attempts;
      if (head.result?.status === 'not_modified' || (head.result && head.result.etag === asset.etag)) return checked(head.result.etag, 'not_modified');
      // An origin that refuses HEAD is asked with a conditional GET instead.
      if (!head.result) ifNoneMatch = asset.etag;
    }
    const got = await deps.fetcher.fetch(sourceOf(job, asset), { ifNoneMatch });
    attempts += got.attempts;
    doneWithHost();
    if (got.status === 'not_modified') return checked(got.etag, 'not_modified');
    const body = got.body;
    if (!body) throw new Error('a successful GET without its body');
    try {
      const contentSha256 = body.sha256;
      // A new ETag over the same bytes (a CDN re-deploy): keep the stored asset, remember the ETag.
      if (asset.status === 'ingested' && asset.contentSha256 === contentSha256) return await checked(got.etag, 'unchanged');
      // With renditions the image is decoded in full there, which checks it: no second decode here.
      const image = await inspectImage(body.path, { decode: deps.renditions.specs.length === 0 });
      const renditions = await deps.renditions.forImage(contentSha256, body.path, image);
      const storagePath = await deps.store.putFile(contentSha256, body.path, body.sizeBytes, image.contentType);
      const stored = { ...image, etag: got.etag, byteSize: body.sizeBytes, contentSha256, storagePath, renditions };
      return { outcome: 'ingested', record: () => recorder.ingested(asset, job, stored, attempts) };
    } finally {
      await body.discard();
    }
  } catch (error) {
    const failure = failureOf(error);
    if (!failure) throw error;
    if (error instanceof FetchFailure) attempts += error.attempts;
    return { outcome: 'failed', record: () => recorder.failed(asset, job, failure, Math.max(attempts, 1)) };
  }
}

// Some origins and CDNs answer HEAD with 405 or 501 while GET works.
async function headOrNull(fetcher: ImageFetcher, url: string, etag: string): Promise<{ result: FetchResult | null; attempts: number }> {
  try {
    const result = await fetcher.fetch(url, { method: 'HEAD', ifNoneMatch: etag });
    return { result, attempts: result.attempts };
  } catch (error) {
    if (error instanceof FetchFailure && (error.status === 405 || error.status === 501)) return { result: null, attempts: error.attempts };
    throw error;
  }
}
