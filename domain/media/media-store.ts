// Content-addressed image bytes in the object storage: one stored copy per distinct content, whatever the URL or catalog.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { ObjectStorage } from '../../platform/storage/storage.ts';

/** `media/<sha256[0:2]>/<sha256>`: the two-character fan-out keeps local folders small. */
export const mediaPath = (contentSha256: string) => `media/${contentSha256.slice(0, 2)}/${contentSha256}`;

export interface MediaStore {
  /** Stores the bytes (an image of `contentType`) under their content address; returns the storage path. */
  put(contentSha256: string, bytes: Buffer, contentType: string): Promise<string>;
  /** The same for a downloaded file, moved into place where it can be (the local driver), else copied. */
  putFile(contentSha256: string, file: string, sizeBytes: number, contentType: string): Promise<string>;
}

/**
 * Over the storage driver. For the `local` driver the bytes are written straight to the same
 * file the driver would use (`<STORAGE_DIR>/<path>`), aside and renamed like the driver does:
 * a whole image is already in memory, and the driver's stream path costs about twice the
 * thread-pool round trips, which sharp's decodes are queued on too.
 */
export function createMediaStore(storage: ObjectStorage, localDir: string | undefined): MediaStore {
  if (storage.driver === 'local' && localDir !== undefined) {
    const made = new Set<string>();
    const place = async (contentSha256: string, write: (partial: string) => Promise<void>) => {
      const path = mediaPath(contentSha256);
      const file = join(localDir, path);
      const dir = join(localDir, 'media', contentSha256.slice(0, 2));
      if (!made.has(dir)) {
        await mkdir(dir, { recursive: true });
        made.add(dir);
      }
      // Same path ⇔ same bytes: rewriting an existing file changes nothing, so no existence check.
      const partial = `${file}.part-${randomBytes(6).toString('hex')}`;
      try {
        await write(partial);
        await rename(partial, file);
      } catch (error) {
        await rm(partial, { force: true });
        throw error;
      }
      return path;
    };
    return {
      put: (contentSha256, bytes) => place(contentSha256, (partial) => writeFile(partial, bytes)),
      // A rename when the download folder is on the same file system (it is under STORAGE_DIR).
      putFile: (contentSha256, downloaded) => place(contentSha256, (partial) => rename(downloaded, partial).catch((error: { code?: string }) => {
        if (error.code !== 'EXDEV') throw error;
        return copyFile(downloaded, partial);
      })),
    };
  }
  return {
    async put(contentSha256, bytes, contentType) {
      const path = mediaPath(contentSha256);
      // An existing object of the right size is this content already: skip the upload.
      if ((await storage.stat(path))?.sizeBytes !== bytes.length) await storage.write(path, Readable.from([bytes]), bytes.length, contentType);
      return path;
    },
    async putFile(contentSha256, file, sizeBytes, contentType) {
      const path = mediaPath(contentSha256);
      if ((await storage.stat(path))?.sizeBytes !== sizeBytes) await storage.write(path, createReadStream(file), sizeBytes, contentType);
      return path;
    },
  };
}
