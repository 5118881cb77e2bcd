// Builds the object storage the configuration names: the `local` driver, or the `s3` driver loaded on first use.
import { detached } from '../async-context.ts';
import type { Config } from '../config/config.ts';
import { createLocalStorage } from './local.ts';
import type { ObjectStorage } from './storage.ts';

export function createStorage(config: Config): ObjectStorage {
  return config.storageDriver === 's3'
    ? lazyS3(config)
    : createLocalStorage({ dir: config.storageDir, publicBaseUrl: config.publicBaseUrl, secret: config.signingSecret });
}

/** The s3 driver, its SDK loaded on first use: processes on the local driver never pay for it. */
function lazyS3(config: Config): ObjectStorage {
  let loaded: Promise<ObjectStorage> | undefined;
  const s3 = () => (loaded ??= detached(() => import('./s3.ts')).then((m) => m.createS3Storage(config.s3)));
  return {
    driver: 's3',
    signUpload: async (path, upload) => (await s3()).signUpload(path, upload),
    signDownload: async (path, download) => (await s3()).signDownload(path, download),
    stat: async (path) => (await s3()).stat(path),
    read: async (path, offset) => (await s3()).read(path, offset),
    readChunks: async function* (path) {
      yield* (await s3()).readChunks(path);
    },
    write: async (path, body, sizeBytes, contentType) => (await s3()).write(path, body, sizeBytes, contentType),
    remove: async (path) => (await s3()).remove(path),
  };
}
