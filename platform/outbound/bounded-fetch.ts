// A fetch for ky over node:http(s): the network guard at connect time, no redirects followed, and a body written to a file (hashed on the way) but never past a byte cap.
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { assertHostAllowed, guardedLookup } from './network-guard.ts';

/** The body is larger than the cap (by Content-Length, or while reading); never retried. */
export class TooLargeError extends Error {
  override name = 'TooLargeError';
  readonly code = 'ETOOLARGE';
  constructor(maxBytes: number) {
    super(`larger than ${Math.round(maxBytes / (1024 * 1024))} MB`);
  }
}

export interface BoundedFetchOptions {
  readonly maxBytes: number;
  /** OUTBOUND_ALLOW_PRIVATE: the guard is off for every host. */
  readonly allowPrivate: boolean;
  /** `host[:port]` (lower case, as in URL#host) the guard lets through. */
  readonly allowedHosts: ReadonlySet<string>;
  /** Sockets kept per origin between downloads. */
  readonly maxSocketsPerHost?: number;
  /** Where bodies are written while they arrive; the caller moves or discards each file. */
  readonly downloadDir: string;
}

/** A downloaded body: a file of `sizeBytes` bytes whose SHA-256 (hex) was taken while it arrived. */
export interface DownloadedBody {
  readonly path: string;
  readonly sizeBytes: number;
  readonly sha256: string;
  /** Deletes the file, unless it was moved away. */
  discard(): Promise<void>;
}

export interface BoundedFetch {
  (input: Request | URL | string, init?: RequestInit): Promise<Response>;
  /** The body of a 2xx response this fetch made (its Response carries no body of its own). */
  bodyOf(response: Response): DownloadedBody | undefined;
  close(): void;
}

// Responses that carry no body by definition; the Response constructor refuses one for them.
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

/**
 * Errors before a response (refused address, connection reset, DNS failure) reject as a
 * TypeError('fetch failed', { cause }) like undici's fetch, so ky sees a network error and its
 * retry policy decides; a body over the cap rejects with TooLargeError.
 */
export function createBoundedFetch(options: BoundedFetchOptions): BoundedFetch {
  const agentOptions = { keepAlive: true, maxSockets: options.maxSocketsPerHost ?? 16, maxFreeSockets: 16, scheduling: 'lifo' as const };
  // Two pools, so a socket opened for an allowed host is never reused under the guard or the other way round.
  const pools = {
    guarded: { lookup: guardedLookup(options.allowPrivate), http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) },
    open: { lookup: guardedLookup(true), http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) },
  };
  const bodies = new WeakMap<Response, DownloadedBody>();

  const boundedFetch = ((input: Request | URL | string, init?: RequestInit): Promise<Response> => {
    const request = input instanceof Request ? input : new Request(input, init);
    const url = new URL(request.url);
    return new Promise<Response>((resolve, reject) => {
      const networkError = (cause: unknown) => reject(new TypeError('fetch failed', { cause }));
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return networkError(new Error(`unsupported protocol ${url.protocol}`));
      const open = options.allowPrivate || options.allowedHosts.has(url.host);
      try {
        assertHostAllowed(url.hostname, open); // IP literals skip the lookup
      } catch (error) {
        return networkError(error);
      }
      const pool = open ? pools.open : pools.guarded;
      const secure = url.protocol === 'https:';
      const headers: Record<string, string> = {};
      request.headers.forEach((value, name) => { headers[name] = value; });
      const req = (secure ? https : http).request(url, {
        method: request.method,
        headers,
        agent: secure ? pool.https : pool.http,
        lookup: pool.lookup,
        signal: request.signal,
      }, (res) => onResponse(res, request.method === 'HEAD'));
      req.on('error', networkError);
      req.end();

      function onResponse(res: IncomingMessage, head: boolean) {
        const status = res.statusCode ?? 0;
        const responseHeaders = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) responseHeaders.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const bodyless = head || NULL_BODY_STATUS.has(status);
        if (bodyless || status < 200 || status >= 300) {
          // Only a success's body is of use; others (redirects, errors) are dropped with their socket.
          if (bodyless) res.resume();
          else res.destroy();
          return resolve(new Response(null, { status: status >= 200 && status <= 599 ? status : 502, headers: responseHeaders }));
        }
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > options.maxBytes) {
          reject(new TooLargeError(options.maxBytes));
          return res.destroy();
        }
        // To a file, not memory: a 20 MB image costs a process no more than a small one.
        const path = join(options.downloadDir, `download-${randomBytes(8).toString('hex')}`);
        const file = createWriteStream(path);
        const discard = () => rm(path, { force: true });
        const digest = createHash('sha256');
        let received = 0;
        let failed = false;
        const fail = (error: Error, network: boolean) => {
          if (failed) return;
          failed = true;
          res.destroy();
          file.destroy();
          void discard();
          if (network) networkError(error);
          else reject(error);
        };
        res.on('data', (chunk: Buffer) => {
          received += chunk.length;
          // Rejected before the destroy: its 'close' must not turn this into a retryable network error.
          if (received > options.maxBytes) return fail(new TooLargeError(options.maxBytes), false);
          digest.update(chunk);
          if (!file.write(chunk)) {
            res.pause();
            file.once('drain', () => res.resume());
          }
        });
        res.on('error', (error) => fail(error, true));
        file.on('error', (error) => fail(error, false));
        // A connection cut mid-body: 'close' without a complete message (settles nothing if 'end' already did).
        res.on('close', () => {
          if (!res.complete) fail(new Error('connection closed before the end of the body'), true);
        });
        res.on('end', () => {
          if (!res.complete || failed) return;
          file.end(() => {
            if (failed) return;
            const response = new Response(null, { status, headers: responseHeaders });
            bodies.set(response, { path, sizeBytes: received, sha256: digest.digest('hex'), discard });
            resolve(response);
          });
        });
      }
    });
  }) as BoundedFetch;

  boundedFetch.bodyOf = (response) => bodies.get(response);
  boundedFetch.close = () => {
    for (const pool of [pools.guarded, pools.open]) {
      pool.http.destroy();
      pool.https.destroy();
    }
  };
  return boundedFetch;
}
