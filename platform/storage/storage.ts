// The object storage of import files: one interface, a `local` and an `s3` driver, chosen by config.
import type { Readable } from 'node:stream';
import type { Config } from '../config/config.ts';
import { createLocalStorage } from './local.ts';

export interface SignedUpload {
  readonly contentType: string;
  /** The declared size; the body may not exceed it (s3: must equal it, the length is signed). */
  readonly sizeBytes: number;
  readonly expiresInSeconds: number;
}

export interface ObjectStorage {
  readonly driver: 'local' | 's3';
  /** An address the caller PUTs the file to without an API key, valid for `expiresInSeconds`. */
  signUpload(path: string, upload: SignedUpload): Promise<string>;
  /** The stored object's size, or undefined when nothing is stored at `path`. */
  stat(path: string): Promise<{ sizeBytes: number } | undefined>;
  /** The object's bytes from `offset` on, as a stream (the consumer resumes mid-file). */
  read(path: string, offset?: number): Promise<Readable>;
  /**
   * The object's bytes in order, for a pass that keeps none of them (the counting pass): each
   * chunk is valid only until the next is asked for. The local driver reads into one reused
   * buffer, so a pass over a 100 MB file allocates nothing that waits for the garbage collector.
   */
  readChunks(path: string): AsyncIterable<Buffer>;
  /**
   * Stores `sizeBytes` bytes from `body` at `path`, replacing what was there; `contentType` is
   * the object's media type where the store keeps one (s3).
   */
  write(path: string, body: Readable, sizeBytes: number, contentType: string): Promise<void>;
  remove(path: string): Promise<void>;
}

/** `imports/<catalogId>/<jobId>.jsonl`: the catalog in the path keeps tenants apart in a shared bucket. */
export const importPath = (catalogId: string, jobId: string) => `imports/${catalogId}/${jobId}.jsonl`;

// What storage paths may look like (the contract's pattern), without `.`/`..` segments.
const SAFE_PATH = /^[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*$/;

export function isSafePath(path: string): boolean {
  return path.length <= 1024 && SAFE_PATH.test(path) && !path.split('/').some((s) => s === '.' || s === '..');
}

export function createStorage(config: Config): ObjectStorage {
  return config.storageDriver === 's3'
    ? lazyS3(config)
    : createLocalStorage({ dir: config.storageDir, publicBaseUrl: config.publicBaseUrl, secret: config.signingSecret });
}

/** The s3 driver, its SDK loaded on first use: processes on the local driver never pay for it. */
function lazyS3(config: Config): ObjectStorage {
  let loaded: Promise<ObjectStorage> | undefined;
  const s3 = () => (loaded ??= import('./s3.ts').then((m) => m.createS3Storage(config.s3)));
  return {
    driver: 's3',
    signUpload: async (path, upload) => (await s3()).signUpload(path, upload),
    stat: async (path) => (await s3()).stat(path),
    read: async (path, offset) => (await s3()).read(path, offset),
    readChunks: async function* (path) {
      yield* (await s3()).readChunks(path);
    },
    write: async (path, body, sizeBytes, contentType) => (await s3()).write(path, body, sizeBytes, contentType),
    remove: async (path) => (await s3()).remove(path),
  };
}
