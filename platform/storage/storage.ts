// The object storage of import files and media: the interface its `local` and `s3` drivers implement, and safe paths.
import type { Readable } from 'node:stream';

export interface SignedUpload {
  readonly contentType: string;
  /** The declared size; the body may not exceed it (s3: must equal it, the length is signed). */
  readonly sizeBytes: number;
  readonly expiresInSeconds: number;
}

/**
 * A GET address for a stored object, without an API key. `signedAt` and `expiresAt` (unix
 * seconds) are the caller's: the same pair gives the same address, so it can be cached.
 */
export interface SignedDownload {
  readonly contentType: string;
  readonly signedAt: number;
  readonly expiresAt: number;
}

export interface ObjectStorage {
  readonly driver: 'local' | 's3';
  /** An address the caller PUTs the file to without an API key, valid for `expiresInSeconds`. */
  signUpload(path: string, upload: SignedUpload): Promise<string>;
  /** An address anyone can GET the object at until `expiresAt`, served with `contentType`. */
  signDownload(path: string, download: SignedDownload): Promise<string>;
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

// What storage paths may look like (the contract's pattern), without `.`/`..` segments.
const SAFE_PATH = /^[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*$/;

export function isSafePath(path: string): boolean {
  return path.length <= 1024 && SAFE_PATH.test(path) && !path.split('/').some((s) => s === '.' || s === '..');
}
