// A job's file fetched from its address: behind the network guard, HTTPS only unless private addresses are allowed, capped while streaming, skipped when unchanged.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { SecretKeyError } from '../../platform/crypto/secret-box.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import type { Db } from '../../platform/db/sql.ts';
import { guardedGet } from '../../platform/outbound/guarded-get.ts';
import { RefusedAddressError } from '../../platform/outbound/network-guard.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import type { JobRow } from './job-store.ts';
import { IMPORT_CONTENT_TYPE, MAX_FILE_BYTES } from './jobs.ts';
import { lastValidators, sourceAddress, sourceHeaders } from './source-store.ts';
import { shownUrl } from './view.ts';
import type { Validators } from './source-store.ts';

export interface SourceOptions {
  /** OUTBOUND_ALLOW_PRIVATE (development and tests): the guard is off and `http:` is allowed. */
  readonly allowPrivate: boolean;
  /** Until a hop's answer headers, and between two chunks of the body. */
  readonly timeoutMs: number;
}

export type SourceOutcome =
  | { readonly kind: 'stored'; readonly sizeBytes: number; readonly validators: Validators }
  | { readonly kind: 'unchanged'; readonly validators: Validators }
  | { readonly kind: 'failed'; readonly reason: string };

const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
// JSONL has no registered type; these are what servers and buckets answer for it.
const JSONL_TYPES = /^(application\/(x-ndjson|ndjson|jsonl|x-jsonlines|json|octet-stream)|text\/plain|binary\/octet-stream)$/;

/** Why an address cannot be a source, or undefined: http(s), and https unless private addresses are allowed. */
export function sourceUrlProblem(url: URL, allowPrivate: boolean): string | undefined {
  if (url.protocol === 'https:' || (url.protocol === 'http:' && allowPrivate)) return undefined;
  return url.protocol === 'http:' ? 'must be an https address (OUTBOUND_ALLOW_PRIVATE=true allows http in development)' : 'must be an http(s) address';
}

class SourceFailure extends Error {}

const validatorsOf = (response: IncomingMessage): Validators =>
  ({ etag: response.headers.etag ?? null, lastModified: response.headers['last-modified'] ?? null });

/** The same version of the source: an equal strong ETag, or else an equal Last-Modified. */
const sameVersion = (a: Validators, b: Validators) =>
  a.etag !== null || b.etag !== null ? a.etag === b.etag : a.lastModified !== null && a.lastModified === b.lastModified;

function unreachable(error: unknown, host: string): SourceFailure {
  const chain: unknown[] = [];
  for (let e = error; e instanceof Error && chain.length < 5; e = e.cause) chain.push(e);
  if (chain.some((e) => e instanceof RefusedAddressError)) {
    return new SourceFailure(`the source ${host} is refused by the network guard: a private, loopback, link-local or metadata address (OUTBOUND_ALLOW_PRIVATE=true allows them in development)`);
  }
  const code = chain.map((e) => (e as { code?: string }).code).find((c) => typeof c === 'string');
  const said = code === 'ECONNREFUSED' ? 'connection refused' : code === 'ENOTFOUND' ? 'host not found' : code === 'ETIMEDOUT' ? 'no answer in time' : code ?? 'network error';
  return new SourceFailure(`the source ${host} is unreachable: ${said}`);
}

/**
 * GET with redirects, each hop checked again (scheme, then the guard at connect time). The
 * caller's headers go only to the address's own origin: a redirect elsewhere does not get them.
 */
async function open(url: URL, headers: Record<string, string>, options: SourceOptions, method: 'GET' | 'HEAD' = 'GET'): Promise<IncomingMessage> {
  let current = url;
  for (let hop = 0; ; hop += 1) {
    const sent = current.origin === url.origin ? headers : {};
    let response: IncomingMessage;
    try {
      response = await guardedGet(current, { method, headers: { 'user-agent': 'Catalog-Import/1.0', ...sent }, allowPrivate: options.allowPrivate, timeoutMs: options.timeoutMs });
    } catch (error) {
      throw unreachable(error, current.host);
    }
    if (!REDIRECTS.has(response.statusCode ?? 0) || !response.headers.location) return response;
    response.destroy();
    if (hop >= MAX_REDIRECTS) throw new SourceFailure(`the source redirected more than ${MAX_REDIRECTS} times`);
    current = new URL(response.headers.location, current);
    const problem = sourceUrlProblem(current, options.allowPrivate);
    if (problem) throw new SourceFailure(`the source redirected to ${shownUrl(current.href)}, which ${problem}`);
  }
}

/** A body that ended early, in the words the docs quote: with the size it announced, when it did. */
function cutShort(received: number, declared: number): string {
  return Number.isFinite(declared)
    ? `the source sent ${received} of the ${declared} bytes it announced`
    : `the connection to the source closed after ${received} bytes, before the end of the file`;
}

/** The body into `path`, never past MAX_FILE_BYTES; its size. */
async function download(response: IncomingMessage, path: string, timeoutMs: number): Promise<number> {
  let received = 0;
  const declared = Number(response.headers['content-length']);
  response.setTimeout(timeoutMs, () => response.destroy(new SourceFailure('the source stopped sending before the end of the file')));
  try {
    await pipeline(response, async function* (chunks: AsyncIterable<Buffer>) {
      for await (const chunk of chunks) {
        received += chunk.length;
        if (received > MAX_FILE_BYTES) throw new SourceFailure('the source is over 100 MB');
        yield chunk;
      }
    }, createWriteStream(path));
  } catch (error) {
    if (error instanceof SourceFailure) throw error;
    throw new SourceFailure(cutShort(received, declared));
  }
  if (Number.isFinite(declared) && declared !== received) throw new SourceFailure(cutShort(received, declared));
  return received;
}

/**
 * Fetches the job's file into storage, at the job's path. With ifChanged, the last completed job
 * of the same address gives the conditions (If-None-Match, If-Modified-Since): an answer 304, or
 * one with the same validators, ends here without reading the body. A source whose validators
 * differ after the read (a HEAD) changed while it was read.
 */
export async function fetchSource(db: Db, storage: ObjectStorage, secrets: SecretBox, job: JobRow, options: SourceOptions): Promise<SourceOutcome> {
  let headers: Record<string, string>;
  let url: URL | undefined;
  try {
    headers = await sourceHeaders(db, secrets, job.id);
    url = await sourceAddress(db, secrets, job.id);
  } catch (error) {
    // Never fetched without them: the source would answer for someone else, or refuse. The message names which.
    if (error instanceof SecretKeyError) return { kind: 'failed', reason: `the source's address or headers cannot be opened: ${error.message}` };
    throw error;
  }
  // Dropped by the job's end (a cancel) since the job was read: the failure is not recorded over it.
  if (url === undefined) return { kind: 'failed', reason: 'the job ended before its source was fetched' };
  const before = job.source_if_changed ? await lastValidators(db, job.catalog_id, url) : undefined;
  const conditions: Record<string, string> = {};
  if (before?.etag) conditions['if-none-match'] = before.etag;
  if (before?.lastModified) conditions['if-modified-since'] = before.lastModified;
  const folder = await mkdtemp(join(tmpdir(), 'catalog-source-'));
  try {
    const response = await open(url, { ...headers, ...conditions }, options);
    const status = response.statusCode ?? 0;
    const validators = validatorsOf(response);
    if (before && (status === 304 || (status === 200 && sameVersion(before, validators)))) {
      response.destroy();
      return { kind: 'unchanged', validators: status === 304 ? before : validators };
    }
    if (status !== 200) {
      response.destroy();
      return { kind: 'failed', reason: `the source answered HTTP ${status}` };
    }
    const type = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== '' && !JSONL_TYPES.test(type)) {
      response.destroy();
      return { kind: 'failed', reason: `the source answered Content-Type ${type}, not JSONL` };
    }
    if (Number(response.headers['content-length']) > MAX_FILE_BYTES) {
      response.destroy();
      return { kind: 'failed', reason: 'the source is over 100 MB' };
    }
    const file = join(folder, 'source.jsonl');
    const sizeBytes = await download(response, file, options.timeoutMs);
    if (validators.etag !== null || validators.lastModified !== null) {
      const after = await open(url, headers, options, 'HEAD');
      after.destroy();
      if ((after.statusCode ?? 0) === 200 && !sameVersion(validators, validatorsOf(after))) {
        return { kind: 'failed', reason: 'the source changed while it was read; import it again' };
      }
    }
    await storage.write(job.storage_path, createReadStream(file), sizeBytes, IMPORT_CONTENT_TYPE);
    return { kind: 'stored', sizeBytes, validators };
  } catch (error) {
    if (error instanceof SourceFailure) return { kind: 'failed', reason: error.message };
    throw error;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
