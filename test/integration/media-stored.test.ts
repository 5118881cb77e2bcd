// Stored images served back: signed addresses without a key, renditions by sharp, content dedupe, failure reasons on items, the asset API and its refresh.
import assert from 'node:assert/strict';
import { hash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import * as api from '../../generated/client.ts';
import type { Item, ItemPayload } from '../../generated/client.ts';
import { mediaPath } from '../../domain/media/media-store.ts';
import { createLocalStorage } from '../../platform/storage/local.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { makeImage } from '../helpers/image-origin.ts';
import type { ImageOrigin } from '../helpers/image-origin.ts';
import { eventually, mediaEvents, settledItem, startMediaBed } from '../helpers/media.ts';
import type { MediaBed } from '../helpers/media.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const TTL_SECONDS = 600;
let origin: ImageOrigin;
let service: TestService;
let tenant: Tenant;
let storageDir: string;
let sql: MediaBed['sql'];
const opts = (key = tenant.key) => clientOptions(service.url, key);
const item = (externalId: string, urls: string[]): ItemPayload => ({
  externalSystem: 'erp', externalId, name: `Item ${externalId}`, media: urls.map((url, i) => ({ url, sortOrder: i })),
});
const sha256 = (bytes: Buffer) => hash('sha256', bytes, 'hex');
/** Stored objects under the storage folder whose name is `sha`. */
const storedFiles = (sha: string) => (existsSync(join(storageDir, 'media', sha.slice(0, 2))) ? readdirSync(join(storageDir, 'media', sha.slice(0, 2))).filter((f) => f === sha) : []);

/** A JPEG stored sideways (EXIF orientation 6, shown 900 × 1200) that carries a copyright and a GPS position. */
async function sidewaysPhoto(): Promise<Buffer> {
  const image = await makeImage('jpeg', 1200, 900, 7);
  return sharp(image).jpeg({ quality: 90 }).withMetadata({ orientation: 6 })
    .withExif({ IFD0: { Copyright: 'Merchant' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '51/1 30/1 0/1' } }).toBuffer();
}

let bed: MediaBed | undefined;
before(async () => {
  bed = await startMediaBed(FILE, { MEDIA_RETRIES: '1', MEDIA_URL_TTL_SECONDS: String(TTL_SECONDS) });
  ({ origin, service, tenant, sql, storageDir } = bed);
});
after(() => bed?.close());

async function ingested(externalId: string, urls: string[]): Promise<Item> {
  expectData(await api.upsertItem(item(externalId, urls), opts()), 201);
  return settledItem(service.url, tenant.key, externalId);
}

test('an ingested image loads at its storedUrl without a key; ETag, 304, HEAD and Cache-Control; renditions are upright WebP without metadata', async () => {
  const photo = await sidewaysPhoto();
  assert.ok((await sharp(photo).metadata()).exif, 'the source carries EXIF');
  origin.serve('/photo.jpg', { body: photo, contentType: 'image/jpeg' });
  const [media] = (await ingested('STORED-1', [origin.at('/photo.jpg')])).media;
  assert.equal(media!.status, 'ingested');
  assert.equal(media!.contentSha256, sha256(photo));
  assert.deepEqual([media!.width, media!.height, media!.failure], [900, 1200, null]);
  assert.match(media!.assetId!, /^[0-9a-f-]{36}$/);

  const url = new URL(media!.storedUrl!);
  assert.equal(url.origin, service.url);
  const loaded = await fetch(url);
  assert.equal(loaded.status, 200);
  assert.equal(loaded.headers.get('content-type'), 'image/jpeg');
  assert.equal(loaded.headers.get('etag'), `"${sha256(photo)}"`);
  const cacheControl = /^public, max-age=(\d+), immutable$/.exec(loaded.headers.get('cache-control') ?? '');
  assert.ok(cacheControl, loaded.headers.get('cache-control') ?? 'no Cache-Control');
  // Valid for the TTL past the hour it was signed in: between TTL and TTL + 1 h from now.
  assert.ok(Number(cacheControl[1]) >= TTL_SECONDS - 60 && Number(cacheControl[1]) <= TTL_SECONDS + 3600, cacheControl[1]);
  assert.ok(Buffer.from(await loaded.arrayBuffer()).equals(photo), 'the stored bytes are the source bytes');

  const again = await fetch(url, { headers: { 'if-none-match': `"${sha256(photo)}"` } });
  assert.equal(again.status, 304);
  assert.equal((await again.arrayBuffer()).byteLength, 0);
  const head = await fetch(url, { method: 'HEAD' });
  assert.deepEqual([head.status, head.headers.get('content-length'), head.headers.get('etag')], [200, String(photo.length), `"${sha256(photo)}"`]);
  assert.equal(storedFiles(sha256(photo)).length, 1);

  assert.deepEqual(media!.renditions.map((r) => [r.name, r.size, r.contentType]), [['thumb', 200, 'image/webp'], ['medium', 800, 'image/webp']]);
  for (const rendition of media!.renditions) {
    const answer = await fetch(rendition.storedUrl!);
    assert.equal(answer.headers.get('content-type'), 'image/webp');
    const bytes = Buffer.from(await answer.arrayBuffer());
    assert.deepEqual([bytes.length, sha256(bytes)], [rendition.byteSize, rendition.contentSha256]);
    const decoded = await sharp(bytes).metadata();
    // Upright (portrait, as the orientation flag said), within its box, with no EXIF (no GPS), ICC or XMP left.
    assert.deepEqual([decoded.format, decoded.width, decoded.height], ['webp', rendition.width, rendition.height]);
    assert.equal(Math.max(decoded.width, decoded.height), rendition.size);
    assert.ok(decoded.height > decoded.width, `${rendition.name} is not upright: ${decoded.width} × ${decoded.height}`);
    assert.deepEqual([decoded.exif, decoded.icc, decoded.xmp, decoded.orientation], [undefined, undefined, undefined, undefined]);
  }
  // The same read within the hour hands out the same addresses (cacheable).
  const read = expectData(await api.getItem('erp', 'STORED-1', opts()), 200).media[0]!;
  assert.deepEqual([read.storedUrl, read.renditions.map((r) => r.storedUrl)], [media!.storedUrl, media!.renditions.map((r) => r.storedUrl)]);
});

test('a tampered, retyped, expired or malformed address gets the error envelope; only images are served', async () => {
  const png = await makeImage('png', 40, 30, 3);
  origin.serve('/tamper.png', { body: png });
  const [media] = (await ingested('STORED-2', [origin.at('/tamper.png')])).media;
  const url = new URL(media!.storedUrl!);
  const refused = async (address: URL | string, status: number, code: string, method = 'GET') => {
    const answer = await fetch(address, { method });
    assert.equal(answer.status, status, `${method} ${address}`);
    assert.ok(answer.headers.get('x-request-id'));
    if (method === 'HEAD') return;
    const body = await answer.json() as { success: boolean; error: { code: string } };
    assert.deepEqual([body.success, body.error.code], [false, code]);
  };
  const tampered = new URL(url);
  tampered.searchParams.set('signature', '0'.repeat(64));
  await refused(tampered, 403, 'forbidden');
  await refused(tampered, 403, 'forbidden', 'HEAD');
  const retyped = new URL(url);
  retyped.searchParams.set('type', 'image/svg+xml');
  await refused(retyped, 403, 'forbidden');

  // An address signed with the service's own secret, expired a minute ago.
  const path = mediaPath(sha256(png));
  const now = Math.floor(Date.now() / 1000);
  const storage = createLocalStorage({ dir: storageDir, publicBaseUrl: service.url, secret: service.config.signingSecret });
  await refused(await storage.signDownload(path, { contentType: 'image/png', signedAt: now - 3600, expiresAt: now - 60 }), 403, 'forbidden');
  // Validly signed, but nothing stored there; and a path that is no image's.
  await refused(await storage.signDownload(mediaPath('ab'.repeat(32)), { contentType: 'image/png', signedAt: now, expiresAt: now + 60 }), 404, 'not_found');
  await refused(await storage.signDownload('imports/x/y.jsonl', { contentType: 'image/png', signedAt: now, expiresAt: now + 60 }), 400, 'validation_error');
  const malformed = new URL(url);
  malformed.searchParams.delete('type');
  await refused(malformed, 400, 'validation_error');
  await refused(url, 405, 'method_not_allowed', 'DELETE');
});

test('two URLs serving the same bytes are stored once, renditions made once; each asset keeps its own source and ETag', async () => {
  const png = await makeImage('png', 300, 200, 11);
  origin.serve('/same-a.png', { body: png, etag: '"etag-a"' });
  origin.serve('/same-b.png', { body: png, etag: '"etag-b"' });
  const item1 = await ingested('DEDUPE-1', [origin.at('/same-a.png')]);
  const item2 = await ingested('DEDUPE-2', [origin.at('/same-b.png')]);
  const [a, b] = [item1.media[0]!, item2.media[0]!];
  assert.notEqual(a.assetId, b.assetId);
  assert.equal(a.contentSha256, b.contentSha256);
  assert.deepEqual(a.renditions.map((r) => r.contentSha256), b.renditions.map((r) => r.contentSha256));
  assert.equal(storedFiles(sha256(png)).length, 1);
  for (const r of a.renditions) assert.equal(storedFiles(r.contentSha256).length, 1);
  const { rows } = await sql.query('SELECT source_url, etag FROM media_assets WHERE catalog_id = $1 AND id = ANY($2::uuid[]) ORDER BY source_url',
    [tenant.catalogId, [a.assetId, b.assetId]]);
  assert.deepEqual(rows.map((r) => [new URL(r.source_url).pathname, r.etag]), [['/same-a.png', '"etag-a"'], ['/same-b.png', '"etag-b"']]);
  const [loadedA, loadedB] = await Promise.all([fetch(a.storedUrl!), fetch(b.storedUrl!)]);
  assert.ok(Buffer.from(await loadedA.arrayBuffer()).equals(Buffer.from(await loadedB.arrayBuffer())));
});

test('a failed entry shows its reason, attempts and last attempt on the item; an ingested one shows none', async () => {
  origin.serve('/fine.png', { body: await makeImage('png', 20, 20, 5) });
  origin.serve('/notes.txt', { body: Buffer.from('just text, not an image'), contentType: 'image/png' });
  const settled = await ingested('FAILED-1', [origin.at('/fine.png'), origin.at('/gone.png'), origin.at('/notes.txt')]);
  const [fine, gone, notes] = settled.media;
  assert.equal(fine!.failure, null);
  assert.equal(gone!.status, 'failed');
  assert.equal(gone!.failure!.reason, 'not_found');
  assert.match(gone!.failure!.message, /404/);
  assert.ok(gone!.failure!.attempts >= 1);
  assert.ok(Math.abs(Date.parse(gone!.failure!.lastAttemptAt) - Date.now()) < 10 * 60_000, gone!.failure!.lastAttemptAt);
  assert.deepEqual([notes!.status, notes!.failure!.reason, notes!.storedUrl, notes!.renditions], ['failed', 'not_an_image', null, []]);
  // The asset says the same.
  const asset = expectData(await api.getMediaAsset(gone!.assetId!, opts()), 200);
  assert.deepEqual(asset.failure, gone!.failure);
});

test("the asset API: the asset with its items; another catalog's is a 404; a refresh asks with HEAD and downloads only changed bytes", async () => {
  const first = await makeImage('png', 120, 80, 21);
  origin.serve('/shared.png', { body: first, etag: '"v1"' });
  await ingested('ASSET-1', [origin.at('/shared.png')]);
  const media = (await ingested('ASSET-2', [origin.at('/shared.png?utm_source=x')])).media[0]!;
  const asset = expectData(await api.getMediaAsset(media.assetId!, opts()), 200);
  assert.deepEqual([asset.status, asset.contentSha256, asset.etag, asset.itemCount], ['ingested', sha256(first), '"v1"', 2]);
  assert.deepEqual(asset.items, [{ externalSystem: 'erp', externalId: 'ASSET-1' }, { externalSystem: 'erp', externalId: 'ASSET-2' }]);
  assert.equal(asset.url, origin.at('/shared.png'));
  assert.equal((await fetch(asset.storedUrl!)).status, 200);
  const other = await service.newTenant();
  expectStatus(await api.getMediaAsset(media.assetId!, opts(other.key)), 404);
  expectStatus(await api.refreshMediaAsset(media.assetId!, opts(other.key)), 404);
  expectStatus(await api.getMediaAsset('0192f630-6f7a-7b8c-9d0e-1f2a3b4c5d6e', opts()), 404);

  const checkedAfter = async (before: string | null) => eventually(async () => {
    const now = expectData(await api.getMediaAsset(media.assetId!, opts()), 200);
    return now.lastCheckedAt !== before ? now : undefined;
  }, 'the refresh to be checked');
  const [gets, heads, events] = [origin.gets('/shared.png'), origin.heads('/shared.png'), (await mediaEvents(sql, tenant.catalogId, media.sourceUrlHash)).length];
  expectData(await api.refreshMediaAsset(media.assetId!, opts()), 202);
  const unchanged = await checkedAfter(asset.lastCheckedAt);
  assert.deepEqual([origin.heads('/shared.png'), origin.gets('/shared.png')], [heads + 1, gets], 'one HEAD, no download');
  assert.equal(unchanged.contentSha256, sha256(first));
  assert.equal((await mediaEvents(sql, tenant.catalogId, media.sourceUrlHash)).length, events, 'no event for unchanged bytes');

  const second = await makeImage('png', 120, 80, 22);
  origin.serve('/shared.png', { body: second, etag: '"v2"' });
  expectData(await api.refreshMediaAsset(media.assetId!, opts()), 202);
  const changed = await checkedAfter(unchanged.lastCheckedAt);
  assert.deepEqual([changed.contentSha256, changed.etag], [sha256(second), '"v2"']);
  assert.notDeepEqual(changed.renditions.map((r) => r.contentSha256), asset.renditions.map((r) => r.contentSha256));
  const ingestedEvents = (await mediaEvents(sql, tenant.catalogId, media.sourceUrlHash)).filter((e) => e.type === 'media.ingested');
  assert.equal(ingestedEvents.length, 2, 'media.ingested for the first bytes and for the new ones');
});

test('an asset without renditions (ingested before they existed) gets them on its next check, from the stored image', async () => {
  const png = await makeImage('png', 500, 250, 31);
  origin.serve('/old.png', { body: png });
  const media = (await ingested('BACKFILL-1', [origin.at('/old.png')])).media[0]!;
  await sql.query('UPDATE media_assets SET renditions = NULL WHERE id = $1', [media.assetId]);
  assert.deepEqual(expectData(await api.getMediaAsset(media.assetId!, opts()), 200).renditions, []);
  const gets = origin.gets('/old.png');
  expectData(await api.refreshMediaAsset(media.assetId!, opts()), 202);
  const backfilled = await eventually(async () => {
    const asset = expectData(await api.getMediaAsset(media.assetId!, opts()), 200);
    return asset.renditions.length > 0 ? asset : undefined;
  }, 'renditions to be made');
  assert.deepEqual(backfilled.renditions.map((r) => [r.name, r.width, r.height]), [['thumb', 200, 100], ['medium', 500, 250]]);
  assert.equal(origin.gets('/old.png'), gets, 'made from the stored image, not downloaded again');
});
