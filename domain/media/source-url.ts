// Media source URL normalization (docs/media.md, "Lifecycle"): the key under which one image URL is deduplicated per catalog.
import { hash } from 'node:crypto';

/** Query parameters that only track the visitor; they never change the image (spec "Media source"). */
function isTrackingParam(name: string): boolean {
  const lower = name.toLowerCase();
  return lower.startsWith('utm_') || lower === 'fbclid' || lower === 'gclid';
}

// Plain `<` compares UTF-16 code units; after URLSearchParams encoding names and values are ASCII anyway.
function compareParams(a: [string, string], b: [string, string]): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
  if (a[1] !== b[1]) return a[1] < b[1] ? -1 : 1;
  return 0;
}

/**
 * The normalized form of an absolute http(s) URL: lower-case scheme and host, default port,
 * fragment and tracking parameters removed, the other query parameters sorted by name then value
 * (repeated parameters kept) and re-encoded as application/x-www-form-urlencoded, no bare `?`.
 * The path is kept as the WHATWG URL parser leaves it (dot segments resolved, percent-encoding
 * of non-ASCII). Throws a TypeError when the URL is not an absolute http(s) URL.
 */
export function normalizeMediaUrl(url: string): string {
  const parsed = new URL(url.trim()); // lower-cases scheme and host, drops the default port
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`not an http(s) URL: ${parsed.protocol}`);
  }
  if (parsed.hostname === '') throw new TypeError('URL has no host');
  // The setters are the costly part; most media URLs have neither a fragment nor a query.
  if (parsed.href.includes('#')) parsed.hash = ''; // also removes a bare '#'
  if (parsed.search === '') {
    if (parsed.href.includes('?')) parsed.search = ''; // removes a bare '?'
    return parsed.href;
  }
  const kept: Array<[string, string]> = [];
  for (const entry of parsed.searchParams) {
    if (!isTrackingParam(entry[0])) kept.push(entry);
  }
  kept.sort(compareParams); // Array.prototype.sort is stable
  parsed.search = kept.length === 0 ? '' : new URLSearchParams(kept).toString();
  return parsed.href;
}

/** Lower-case hex SHA-256 of an already normalized URL. */
export function hashNormalizedUrl(normalizedUrl: string): string {
  return hash('sha256', normalizedUrl, 'hex');
}

/** `sourceUrlHash`: lower-case hex SHA-256 of the normalized URL; throws like normalizeMediaUrl. */
export function sourceUrlHash(url: string): string {
  return hashNormalizedUrl(normalizeMediaUrl(url));
}
