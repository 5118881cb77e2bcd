// The embedded storage driver: files under STORAGE_DIR, uploads through the service's own HMAC-signed address.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ObjectStorage } from './storage.ts';
import { isSafePath } from './storage.ts';

const CHUNK_BYTES = 256 * 1024;

/** The route the local driver's upload addresses point at; outside the API prefix (contract: uploadImportFile). */
export const UPLOAD_ROUTE = '/storage/v1/upload/';
/** The route its download addresses point at (contract: downloadStoredObject). */
export const DOWNLOAD_ROUTE = '/storage/v1/download/';

export interface LocalStorageOptions {
  readonly dir: string;
  readonly publicBaseUrl: string;
  readonly secret: string;
}

export interface LocalStorage extends ObjectStorage {
  readonly driver: 'local';
  /** Checks an upload address's `expires` and `signature`: 'ok', 'expired' or 'invalid'. */
  verifyUpload(path: string, expires: number, signature: string, nowSeconds?: number): 'ok' | 'expired' | 'invalid';
  /** The same for a download address, whose signature also covers the content type it is served with. */
  verifyDownload(path: string, expires: number, contentType: string, signature: string, nowSeconds?: number): 'ok' | 'expired' | 'invalid';
  /** Stores an upload aside; `commit` puts it at `path`, `discard` drops it. */
  receive(path: string, body: Readable): Promise<ReceivedUpload>;
}

export interface ReceivedUpload {
  readonly sizeBytes: number;
  commit(): Promise<void>;
  discard(): Promise<void>;
}

// The method is part of what is signed, so an upload signature can never authorize a download, nor
// the reverse; a download's also covers the Content-Type it is answered with.
const signature = (secret: string, path: string, expires: number) =>
  createHmac('sha256', secret).update(`PUT\n${path}\n${expires}`).digest('hex');
const downloadSignature = (secret: string, path: string, expires: number, contentType: string) =>
  createHmac('sha256', secret).update(`GET\n${path}\n${expires}\n${contentType}`).digest('hex');

function verify(expected: string, given: string, expires: number, nowSeconds: number): 'ok' | 'expired' | 'invalid' {
  const wanted = Buffer.from(expected, 'hex');
  const actual = Buffer.from(/^[0-9a-f]{64}$/.test(given) ? given : '', 'hex');
  if (actual.length !== wanted.length || !timingSafeEqual(actual, wanted)) return 'invalid';
  return expires < nowSeconds ? 'expired' : 'ok';
}

export function createLocalStorage(options: LocalStorageOptions): LocalStorage {
  const fileOf = (path: string) => {
    if (!isSafePath(path)) throw new Error(`unsafe storage path ${JSON.stringify(path)}`);
    return join(options.dir, path);
  };
  return {
    driver: 'local',
    async signUpload(path, upload) {
      const expires = Math.floor(Date.now() / 1000) + upload.expiresInSeconds;
      // One percent-encoded segment (`/` → `%2F`), as the contract's storagePath parameter says.
      return `${options.publicBaseUrl}${UPLOAD_ROUTE}${encodeURIComponent(path)}?expires=${expires}&signature=${signature(options.secret, path, expires)}`;
    },
    verifyUpload(path, expires, given, nowSeconds = Date.now() / 1000) {
      return verify(signature(options.secret, path, expires), given, expires, nowSeconds);
    },
    async signDownload(path, download) {
      const { contentType, expiresAt } = download;
      const query = new URLSearchParams({ expires: String(expiresAt), type: contentType, signature: downloadSignature(options.secret, path, expiresAt, contentType) });
      return `${options.publicBaseUrl}${DOWNLOAD_ROUTE}${encodeURIComponent(path)}?${query}`;
    },
    verifyDownload(path, expires, contentType, given, nowSeconds = Date.now() / 1000) {
      return verify(downloadSignature(options.secret, path, expires, contentType), given, expires, nowSeconds);
    },
    async receive(path, body) {
      const file = fileOf(path);
      await mkdir(dirname(file), { recursive: true });
      const partial = `${file}.upload-${randomBytes(6).toString('hex')}`;
      const discard = () => rm(partial, { force: true });
      try {
        await pipeline(body, createWriteStream(partial));
      } catch (error) {
        await discard();
        throw error;
      }
      return { sizeBytes: (await stat(partial)).size, commit: () => rename(partial, file), discard };
    },
    async stat(path) {
      try {
        const info = await stat(fileOf(path));
        return info.isFile() ? { sizeBytes: info.size } : undefined;
      } catch (error) {
        if ((error as { code?: string }).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async read(path, offset = 0) {
      return createReadStream(fileOf(path), { start: offset, highWaterMark: CHUNK_BYTES });
    },
    async *readChunks(path) {
      const handle = await open(fileOf(path), 'r');
      try {
        const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
        for (;;) {
          const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, null);
          if (bytesRead === 0) return;
          yield buffer.subarray(0, bytesRead);
        }
      } finally {
        await handle.close();
      }
    },
    async write(path, body: Readable, sizeBytes) {
      const file = fileOf(path);
      await mkdir(dirname(file), { recursive: true });
      // Written aside and renamed: a reader never sees half a file, a failed write leaves none.
      const partial = `${file}.part-${randomBytes(6).toString('hex')}`;
      try {
        await pipeline(body, createWriteStream(partial));
        const written = (await stat(partial)).size;
        if (written !== sizeBytes) throw new Error(`wrote ${written} bytes to ${path}, expected ${sizeBytes}`);
        await rename(partial, file);
      } catch (error) {
        await rm(partial, { force: true });
        throw error;
      }
    },
    async remove(path) {
      await rm(fileOf(path), { force: true });
    },
  };
}
