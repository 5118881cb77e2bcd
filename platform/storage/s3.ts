// The s3 storage driver: presigned PUTs and ranged reads against AWS S3 or an S3-compatible server (MinIO, S3Proxy).
import { Readable } from 'node:stream';
import {
  CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, PutObjectCommand, S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { S3Config } from '../config/config.ts';
import type { ObjectStorage } from './storage.ts';

const notFound = (error: unknown) => {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404;
};

export function createS3Storage(config: S3Config): ObjectStorage {
  const clientFor = (endpoint: string | undefined) => new S3Client({
    region: config.region,
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    ...(config.accessKeyId && config.secretAccessKey
      ? { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } }
      : {}),
    // Newer SDKs add a CRC32 checksum to every PUT, which a presigned URL would then demand from
    // curl and browsers, and which MinIO/S3Proxy may not know: only where S3 requires one.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const client = clientFor(config.endpoint);
  // A signature covers the host: addresses handed to clients are signed for the host they use.
  const signer = config.publicEndpoint === config.endpoint ? client : clientFor(config.publicEndpoint);
  const Bucket = config.bucket;
  let bucketReady: Promise<void> | undefined;
  // Created on first use, so a fresh MinIO (compose) or S3Proxy needs no manual step.
  const ensureBucket = () => {
    bucketReady ??= (async () => {
      try {
        await client.send(new HeadBucketCommand({ Bucket }));
      } catch (error) {
        if (!notFound(error)) throw error;
        await client.send(new CreateBucketCommand({ Bucket })).catch((created: { name?: string }) => {
          if (created.name !== 'BucketAlreadyOwnedByYou' && created.name !== 'BucketAlreadyExists') throw created;
        });
      }
    })().catch((error: unknown) => {
      bucketReady = undefined;
      throw error;
    });
    return bucketReady;
  };
  const read = async (path: string, offset = 0): Promise<Readable> => {
    const object = await client.send(new GetObjectCommand({ Bucket, Key: path, ...(offset > 0 ? { Range: `bytes=${offset}-` } : {}) }));
    const body = object.Body;
    if (!(body instanceof Readable)) throw new Error('the S3 client did not return a Node stream');
    return body;
  };
  return {
    driver: 's3',
    async signUpload(path, upload) {
      await ensureBucket();
      // Content-Type and Content-Length are signed: S3 itself refuses another type or size.
      return getSignedUrl(signer, new PutObjectCommand({ Bucket, Key: path, ContentType: upload.contentType, ContentLength: upload.sizeBytes }), {
        expiresIn: upload.expiresInSeconds,
        signableHeaders: new Set(['content-type', 'content-length']),
      });
    },
    async signDownload(path, download) {
      return getSignedUrl(signer, new GetObjectCommand({
        Bucket, Key: path, ResponseContentType: download.contentType,
        // The object behind an address never changes (content-addressed): caches may keep it. A
        // fixed age, not the time left: the address must stay the same for the same signedAt.
        ResponseCacheControl: `public, max-age=${download.expiresAt - download.signedAt}, immutable`,
      }), { signingDate: new Date(download.signedAt * 1000), expiresIn: download.expiresAt - download.signedAt });
    },
    async stat(path) {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket, Key: path }));
        return { sizeBytes: head.ContentLength ?? 0 };
      } catch (error) {
        if (notFound(error)) return undefined;
        throw error;
      }
    },
    read,
    async *readChunks(path) {
      yield* await read(path);
    },
    async write(path, body, sizeBytes, contentType) {
      await ensureBucket();
      await client.send(new PutObjectCommand({ Bucket, Key: path, Body: body, ContentLength: sizeBytes, ContentType: contentType }));
    },
    async remove(path) {
      await client.send(new DeleteObjectCommand({ Bucket, Key: path }));
    },
  };
}
