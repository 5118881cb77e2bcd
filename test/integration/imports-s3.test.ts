// The s3 storage driver against a real S3-compatible server (S3Proxy from Maven Central): presigned PUT and GET, ranged reads, retry files, stored images.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import * as api from '../../generated/client.ts';
import { createMediaStore } from '../../domain/media/media-store.ts';
import { createS3Storage } from '../../platform/storage/s3.ts';
import { startS3Proxy } from '../../scripts/s3proxy.ts';
import type { RunningS3Proxy } from '../../scripts/s3proxy.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { makeImage, startImageOrigin } from '../helpers/image-origin.ts';
import type { ImageOrigin } from '../helpers/image-origin.ts';
import { item, jsonl, startImportService, waitForJob } from '../helpers/imports.ts';
import { settledItem } from '../helpers/media.ts';
import type { TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let s3: RunningS3Proxy;
let origin: ImageOrigin;
let service: TestService;
let sql: Awaited<ReturnType<typeof sqlClient>>;

const put = (url: string, body: Buffer, contentType = 'application/x-ndjson') =>
  fetch(url, { method: 'PUT', headers: { 'content-type': contentType }, body: new Uint8Array(body) });

before(async () => {
  s3 = await startS3Proxy(mkdtempSync(join(tmpdir(), 'catalog-s3proxy-')));
  origin = await startImageOrigin();
  service = await startImportService(FILE, {
    OUTBOUND_ALLOW_PRIVATE: 'true', // the image origin is on loopback
    STORAGE_DRIVER: 's3', S3_ENDPOINT: s3.endpoint, S3_BUCKET: 'catalog-imports-test', S3_REGION: 'us-east-1',
    S3_ACCESS_KEY_ID: s3.accessKeyId, S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  });
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await sql?.end();
  await service?.close();
  await origin?.close();
  await s3?.stop();
});

test('s3: a presigned PUT, refused when tampered, of another type or size; the import and a retry run from the bucket', async () => {
  const tenant = await service.newTenant();
  const opts = clientOptions(service.url, tenant.key);
  const file = jsonl([...Array.from({ length: 250 }, (_, i) => item(`S-${i}`)), item('S-BAD', { gtin13: '1' })]);
  const created = expectData(await api.createImport({ fileSizeBytes: file.length }, {}, opts), 201);
  const url = new URL(created.uploadUrl);
  assert.equal(url.origin, s3.endpoint);
  assert.equal(url.pathname, `/catalog-imports-test/${created.storagePath}`);
  assert.equal(url.searchParams.get('X-Amz-Expires'), '3600');
  assert.match(url.searchParams.get('X-Amz-SignedHeaders') ?? '', /content-length;content-type/);
  assert.equal(created.expiresIn, 3600);

  const tampered = new URL(url);
  tampered.searchParams.set('X-Amz-Signature', '0'.repeat(64));
  assert.equal((await put(tampered.toString(), file)).status, 403);
  assert.equal((await put(created.uploadUrl, file, 'text/plain')).status, 403);
  const bigger = await put(created.uploadUrl, Buffer.concat([file, Buffer.from('{}\n')]));
  assert.ok(bigger.status >= 400, `a larger body answered ${bigger.status}`);
  assert.match(expectStatus(await api.startImport(created.jobId, opts), 409).error.message, /no file/);

  // The local upload route is off with the s3 driver.
  const local = await fetch(`${service.url}/storage/v1/upload/${encodeURIComponent(created.storagePath)}?expires=1&signature=${'0'.repeat(64)}`, {
    method: 'PUT', headers: { 'content-type': 'application/x-ndjson' }, body: 'x',
  });
  assert.equal(local.status, 501);

  assert.equal((await put(created.uploadUrl, file)).status, 200);
  expectData(await api.startImport(created.jobId, opts), 202);
  const job = await waitForJob(opts, created.jobId);
  assert.equal(job.status, 'completed_with_errors');
  assert.deepEqual(job.counts, { total: 251, processed: 251, succeeded: 250, failed: 1, unchanged: 0 });
  assert.equal((await sql.query('SELECT count(*)::int AS n FROM items WHERE catalog_id = $1', [tenant.catalogId])).rows[0].n, 250);

  const retry = expectData(await api.retryImport(job.id, opts), 201);
  const retried = await waitForJob(opts, retry.jobId);
  assert.deepEqual(retried.counts, { total: 1, processed: 1, succeeded: 0, failed: 1, unchanged: 0 });
});

test('s3: an expired presigned address is refused', async () => {
  const storage = createS3Storage({
    endpoint: s3.endpoint, publicEndpoint: s3.endpoint, bucket: 'catalog-imports-test', region: 'us-east-1', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey,
  });
  const body = jsonl([item('E-1')]);
  const url = await storage.signUpload('imports/expiry/test.jsonl', { contentType: 'application/x-ndjson', sizeBytes: body.length, expiresInSeconds: 1 });
  await new Promise((r) => setTimeout(r, 2100));
  assert.equal((await put(url, body)).status, 403);
  assert.equal(await storage.stat('imports/expiry/test.jsonl'), undefined);
});

test('s3: with S3_PUBLIC_ENDPOINT, addresses are signed for the host clients use, and work there', async () => {
  // The same server under another name, as a store on a container network is for the host.
  const publicEndpoint = s3.endpoint.replace('127.0.0.1', 'localhost');
  const storage = createS3Storage({
    endpoint: s3.endpoint, publicEndpoint, bucket: 'catalog-imports-test', region: 'us-east-1', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey,
  });
  const body = jsonl([item('P-1')]);
  const url = await storage.signUpload('imports/public/test.jsonl', { contentType: 'application/x-ndjson', sizeBytes: body.length, expiresInSeconds: 60 });
  assert.equal(new URL(url).origin, publicEndpoint);
  // Sent to the other name, the same address no longer verifies: the signature covers the host.
  assert.equal((await put(url.replace(publicEndpoint, s3.endpoint), body)).status, 403);
  assert.equal((await put(url, body)).status, 200);
  assert.deepEqual(await storage.stat('imports/public/test.jsonl'), { sizeBytes: body.length });
});

test('s3: media objects are stored with their image type, import files as JSONL', async () => {
  const config = {
    endpoint: s3.endpoint, publicEndpoint: s3.endpoint, bucket: 'catalog-imports-test', region: 'us-east-1', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey,
  };
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201f5b5d8a90000000049454e44ae426082', 'hex');
  const path = await createMediaStore(createS3Storage(config), undefined).put('ab'.repeat(32), png, 'image/png');
  await createS3Storage(config).write('imports/types/retry.jsonl', Readable.from([Buffer.from('{}\n')]), 3, 'application/x-ndjson');
  const client = new S3Client({
    region: config.region, endpoint: config.endpoint, forcePathStyle: true,
    credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
  });
  try {
    const image = await client.send(new HeadObjectCommand({ Bucket: config.bucket, Key: path }));
    assert.equal(image.ContentType, 'image/png');
    assert.equal(image.ContentLength, png.length);
    const file = await client.send(new HeadObjectCommand({ Bucket: config.bucket, Key: 'imports/types/retry.jsonl' }));
    assert.equal(file.ContentType, 'application/x-ndjson');
  } finally {
    client.destroy();
  }
});

test('s3: a stored image and its renditions load at presigned GET addresses, no key; the local route answers 501', async () => {
  const tenant = await service.newTenant();
  const png = await makeImage('png', 400, 300, 9);
  origin.serve('/s3-image.png', { body: png });
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'S3-IMG', name: 'S3 image', media: [{ url: origin.at('/s3-image.png') }] }, clientOptions(service.url, tenant.key)), 201);
  const media = (await settledItem(service.url, tenant.key, 'S3-IMG')).media[0]!;
  assert.equal(media.status, 'ingested');
  const url = new URL(media.storedUrl!);
  assert.equal(url.origin, s3.endpoint);
  assert.equal(url.searchParams.get('response-content-type'), 'image/png');
  const loaded = await fetch(url);
  assert.equal(loaded.status, 200);
  assert.ok(Buffer.from(await loaded.arrayBuffer()).equals(png));
  for (const rendition of media.renditions) {
    const answer = await fetch(rendition.storedUrl!);
    assert.equal(answer.status, 200, rendition.name);
    assert.equal((await answer.arrayBuffer()).byteLength, rendition.byteSize);
  }
  const tampered = new URL(url);
  tampered.searchParams.set('X-Amz-Signature', '0'.repeat(64));
  assert.equal((await fetch(tampered)).status, 403);
  // The same bytes under another URL: another asset, the same stored object.
  origin.serve('/s3-copy.png', { body: png, etag: '"copy"' });
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'S3-COPY', name: 'S3 copy', media: [{ url: origin.at('/s3-copy.png') }] }, clientOptions(service.url, tenant.key)), 201);
  const copy = (await settledItem(service.url, tenant.key, 'S3-COPY')).media[0]!;
  assert.notEqual(copy.assetId, media.assetId);
  assert.equal(copy.contentSha256, media.contentSha256);
  assert.equal(new URL(copy.storedUrl!).pathname, url.pathname, 'one object in the bucket');
  const local = await fetch(`${service.url}/storage/v1/download/${encodeURIComponent(`media/${media.contentSha256!.slice(0, 2)}/${media.contentSha256}`)}?expires=1&type=image%2Fpng&signature=${'0'.repeat(64)}`);
  assert.equal(local.status, 501);
});
