// The media downloader: ky over the bounded, guarded fetch; timeouts, retries with backoff, a size cap, and redirects followed one checked hop at a time.
import ky, { HTTPError, TimeoutError } from 'ky';
import type { KyInstance } from 'ky';
import { createBoundedFetch, TooLargeError } from './bounded-fetch.ts';
import type { DownloadedBody } from './bounded-fetch.ts';
import { RefusedAddressError } from './network-guard.ts';

/** Why a fetch gave up, after ky's retries for the transient kinds (timeout, network, 408/429/5xx). */
export type FetchFailureKind = 'refused' | 'timeout' | 'too_large' | 'http_status' | 'network' | 'redirects';

export class FetchFailure extends Error {
  override name = 'FetchFailure';
  readonly kind: FetchFailureKind;
  /** The HTTP status of an `http_status` failure. */
  readonly status: number | null;
  /** Requests made, retries and redirect hops included. */
  readonly attempts: number;
  constructor(kind: FetchFailureKind, message: string, attempts: number, status: number | null = null) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.attempts = attempts;
  }
}

export interface ImageFetcherOptions {
  readonly timeoutMs: number;
  readonly retries: number;
  readonly maxBytes: number;
  readonly maxRedirects?: number;
  readonly allowPrivate: boolean;
  readonly allowedHosts?: readonly string[];
  readonly concurrencyPerHost?: number;
  /** Where bodies are written as they arrive (see DownloadedBody). */
  readonly downloadDir: string;
  /** Told when a host answers 429 or 503 with Retry-After (in ms), so its other downloads wait too. */
  readonly onRetryAfter?: (host: string, ms: number) => void;
}

/** Retry-After in ms: delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export type FetchResult =
  | { readonly status: 'not_modified'; readonly etag: string | null; readonly attempts: number }
  | { readonly status: 'ok'; readonly etag: string | null; readonly contentType: string | null; readonly body: DownloadedBody | undefined; readonly attempts: number };

export interface ImageFetcher {
  /** GET; with `ifNoneMatch` a 304 answer is `not_modified`. The body is a file the caller discards (none for HEAD). */
  fetch(url: string, options?: { method?: 'GET' | 'HEAD'; ifNoneMatch?: string | null }): Promise<FetchResult>;
  close(): void;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = 'Catalog-Media/1.0';

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e instanceof Error && chain.length < 5; e = e.cause) chain.push(e);
  return chain;
}

function toFailure(error: unknown, host: string, attempts: number): FetchFailure {
  if (error instanceof FetchFailure) return error;
  if (error instanceof TimeoutError) return new FetchFailure('timeout', `no complete answer from ${host} in time`, attempts);
  if (error instanceof HTTPError) return new FetchFailure('http_status', `HTTP ${error.response.status} from ${host}`, attempts, error.response.status);
  const chain = causes(error);
  const refused = chain.find((e) => e instanceof RefusedAddressError);
  if (refused) return new FetchFailure('refused', (refused as Error).message, attempts);
  if (chain.some((e) => e instanceof TooLargeError)) return new FetchFailure('too_large', (chain.find((e) => e instanceof TooLargeError) as Error).message, attempts);
  const root = chain.at(-1) as (Error & { code?: string }) | undefined;
  const detail = root?.code === 'ECONNREFUSED' ? 'connection refused' : root?.code === 'ENOTFOUND' ? 'host not found' : root?.code ?? root?.message ?? String(error);
  return new FetchFailure('network', `network error from ${host}: ${detail}`, attempts);
}

export function createImageFetcher(options: ImageFetcherOptions): ImageFetcher {
  const boundedFetch = createBoundedFetch({
    maxBytes: options.maxBytes,
    allowPrivate: options.allowPrivate,
    allowedHosts: new Set(options.allowedHosts ?? []),
    ...(options.concurrencyPerHost ? { maxSocketsPerHost: options.concurrencyPerHost } : {}),
    downloadDir: options.downloadDir,
  });
  const client: KyInstance = ky.create({
    fetch: boundedFetch,
    timeout: options.timeoutMs,
    throwHttpErrors: (status) => status >= 400,
    retry: {
      limit: options.retries,
      methods: ['get', 'head'],
      statusCodes: [408, 429, 500, 502, 503, 504],
      afterStatusCodes: [429, 503],
      maxRetryAfter: 30_000,
      backoffLimit: 10_000,
      retryOnTimeout: true,
      // A refused address, an oversized body or a name that does not exist gives the same answer
      // next time (EAI_AGAIN, a resolver hiccup, is retried).
      shouldRetry: ({ error }) => (causes(error).some((e) => e instanceof RefusedAddressError || e instanceof TooLargeError
        || (e as { code?: string }).code === 'ENOTFOUND') ? false : undefined),
    },
  });
  const maxRedirects = options.maxRedirects ?? 5;

  async function fetchOnce(url: string, method: 'GET' | 'HEAD', ifNoneMatch: string | null | undefined): Promise<FetchResult> {
    let current = new URL(url);
    let attempts = 0;
    for (let hop = 0; ; hop++) {
      let response: Response;
      try {
        attempts += 1;
        response = await client(current, {
          method,
          headers: { 'user-agent': USER_AGENT, accept: 'image/*', ...(ifNoneMatch ? { 'if-none-match': ifNoneMatch } : {}) },
          hooks: {
            beforeRetry: [() => { attempts += 1; }],
            afterResponse: [({ response }) => {
              if (response.status !== 429 && response.status !== 503) return;
              const ms = retryAfterMs(response.headers.get('retry-after'));
              if (ms !== undefined) options.onRetryAfter?.(current.host, ms);
            }],
          },
        });
      } catch (error) {
        throw toFailure(error, current.host, attempts);
      }
      if (response.status === 304) return { status: 'not_modified', etag: response.headers.get('etag'), attempts };
      if (REDIRECTS.has(response.status)) {
        const location = response.headers.get('location');
        if (!location) throw new FetchFailure('http_status', `HTTP ${response.status} without a Location from ${current.host}`, attempts, response.status);
        if (hop >= maxRedirects) throw new FetchFailure('redirects', `more than ${maxRedirects} redirects from ${url}`, attempts);
        // Each hop goes back through the bounded fetch: literal addresses and DNS answers are checked again.
        const next = new URL(location, current);
        if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new FetchFailure('redirects', `redirect to an unsupported scheme ${next.protocol}`, attempts);
        current = next;
        continue;
      }
      if (response.status < 200 || response.status >= 300) {
        throw new FetchFailure('http_status', `HTTP ${response.status} from ${current.host}`, attempts, response.status);
      }
      const body = method === 'HEAD' ? undefined : boundedFetch.bodyOf(response);
      return { status: 'ok', etag: response.headers.get('etag'), contentType: response.headers.get('content-type'), body, attempts };
    }
  }

  return {
    fetch: (url, fetchOptions = {}) => fetchOnce(url, fetchOptions.method ?? 'GET', fetchOptions.ifNoneMatch),
    close: () => boundedFetch.close(),
  };
}
