// Signed addresses of stored images for the reads that answer a client: stable for an hour, valid for MEDIA_URL_TTL_SECONDS beyond it.
import type { ItemMedia, MediaRendition } from '../../generated/client.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import { mediaPath } from './media-store.ts';

// An address is signed for the hour it is asked in: every read within that hour hands out the same
// one, so browsers and CDNs cache the image instead of seeing a new URL on every page view.
const WINDOW_SECONDS = 3600;

export interface MediaLinks {
  /** The signed address of stored bytes (an original or a rendition), served as `contentType`. */
  url(contentSha256: string, contentType: string): Promise<string>;
}

export function mediaLinks(storage: ObjectStorage, ttlSeconds: number, now: () => number = Date.now): MediaLinks {
  return {
    url(contentSha256, contentType) {
      const signedAt = Math.floor(now() / 1000 / WINDOW_SECONDS) * WINDOW_SECONDS;
      // Valid for at least the TTL whenever within the hour it was handed out.
      return storage.signDownload(mediaPath(contentSha256), { contentType, signedAt, expiresAt: signedAt + WINDOW_SECONDS + ttlSeconds });
    },
  };
}

type WithMedia = { readonly status: ItemMedia['status']; readonly contentType: string | null; readonly contentSha256: string | null; readonly renditions: MediaRendition[] };

/** The entry with its image's and renditions' addresses filled in, once ingested. */
export async function withStoredUrls<T extends WithMedia>(entry: T, links: MediaLinks): Promise<T & { storedUrl: string | null }> {
  if (entry.status !== 'ingested' || entry.contentSha256 === null || entry.contentType === null) return { ...entry, storedUrl: null };
  const [storedUrl, ...renditionUrls] = await Promise.all([
    links.url(entry.contentSha256, entry.contentType),
    ...entry.renditions.map((r) => links.url(r.contentSha256, r.contentType)),
  ]);
  return { ...entry, storedUrl: storedUrl!, renditions: entry.renditions.map((r, i) => ({ ...r, storedUrl: renditionUrls[i]! })) };
}

/** An item (or anything with `media`) with every ingested entry's addresses signed. */
export async function itemWithStoredUrls<T extends { media: ItemMedia[] }>(item: T, links: MediaLinks): Promise<T> {
  if (item.media.every((m) => m.status !== 'ingested')) return item;
  return { ...item, media: await Promise.all(item.media.map((m) => withStoredUrls(m, links))) };
}
