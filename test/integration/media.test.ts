// Media ingestion end to end against a real local origin: deduplication, detection, refresh with ETags, failures and their events.
import assert from 'node:assert/strict';
import { hash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { ItemPayload } from '../../generated/client.ts';
import { sourceUrlHash } from '../../domain/media/source-url.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { decompressionBomb, makeImage } from '../helpers/image-origin.ts';
import type { ImageOrigin } from '../helpers/image-origin.ts';
import { readTopic } from '../helpers/kafka.ts';
import { SETTLE_MS, assertMediaEvent, downloadBudgetMs, eventually, mediaEvents, mediaJobs, settledItem, startMediaBed } from '../helpers/media.ts';
import type { MediaBed } from '../helpers/media.ts';
import { jsonl, runImport } from '../helpers/imports.ts';
import { metricValue } from '../helpers/metrics.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const RETRIES = 2;
let origin: ImageOrigin;
let service: TestService;
let tenant: Tenant;
let storageDir: string;
let sql: MediaBed['sql'];
const opts = () => clientOptions(service.url, tenant.key);
const item = (externalId: string, urls: string[], overrides: Partial<ItemPayload> = {}): ItemPayload => ({
  externalSystem: 'erp', externalId, name: `Item ${externalId}`,
  media: urls.map((url, i) => ({ url, role: i === 0 ? 'primary' : 'gallery', sortOrder: i })), ...overrides,
});
const asset = async (url: string) =>
  (await sql.query('SELECT * FROM media_assets WHERE catalog_id = $1 AND source_url_hash = $2', [tenant.catalogId, sourceUrlHash(url)])).rows[0];

let bed: MediaBed | undefined;
before(async () => {
  bed = await startMediaBed(FILE, { MEDIA_RETRIES: String(RETRIES) });
  ({ origin, service, tenant, sql, storageDir } = bed);
});
after(() => bed?.close());

test('50 items naming one image through URL variants: one asset, one job, one download, all ingested', async () => {
  const png = await makeImage('png', 320, 240, 7);
  origin.serve('/img/shared.png', { body: png, contentType: 'image/png' });
  const base = origin.at('/img/shared.png');
  const variants = [
    `${base}?size=m&v=2`, `${base}?v=2&size=m`, `${base}?utm_source=feed&v=2&size=m`, `${base}?size=m&fbclid=abc&v=2#zoom`,
    `${base}?gclid=x&v=2&size=m&utm_campaign=spring`, `${base.replace('http://', 'HTTP://')}?v=2&size=m`, `${origin.at('/img/./shared.png')}?size=m&v=2`,
  ];
  const items = Array.from({ length: 50 }, (_, i) => item(`DUP-${i}`, [variants[i % variants.length]!]));
  // Two requests: deduplication holds within a batch and across batches.
  for (const half of [items.slice(0, 25), items.slice(25)]) {
    const { summary } = expectData(await api.bulkUpsertItems({ items: half }, opts()), 200);
    assert.equal(summary.created, 25);
  }
  const first = expectData(await api.getItem('erp', 'DUP-0', opts()), 200);
  assert.ok(['pending', 'ingested'].includes(first.media[0]!.status), 'the item is readable at once');
  const key = sourceUrlHash(variants[0]!);
  assert.equal(new Set(items.map((i) => sourceUrlHash(i.media![0]!.url))).size, 1, 'every variant normalizes to one sourceUrlHash');
  assert.deepEqual((await mediaJobs(sql, tenant.catalogId)).map((j) => j.key), [key], 'one job on catalog.media.v1');

  for (const id of ['DUP-0', 'DUP-26', 'DUP-49']) {
    const settled = await settledItem(service.url, tenant.key, id);
    const { url: _url, assetId, storedUrl, renditions, ...entry } = settled.media[0]!;
    assert.deepEqual(entry, {
      role: 'primary', sortOrder: 0, sourceUrlHash: key, status: 'ingested',
      contentType: 'image/png', width: 320, height: 240, byteSize: png.length, contentSha256: hash('sha256', png, 'hex'), failure: null,
    });
    assert.ok(assetId && storedUrl && renditions.length === 2, 'the asset, its address and its renditions are shown');
  }
  assert.equal(origin.gets('/img/shared.png'), 1, 'downloaded exactly once');
  const row = await asset(variants[0]!);
  const sha = hash('sha256', png, 'hex');
  assert.equal(row.content_sha256, sha);
  assert.equal(row.storage_path, `media/${sha.slice(0, 2)}/${sha}`);
  assert.deepEqual(readFileSync(join(storageDir, row.storage_path)), png, 'stored under its content address');
  assert.equal(row.attempts, 1);
  assert.equal(row.last_error, null);
  assert.ok(row.last_checked_at instanceof Date);
  assert.match(row.etag, /^".+"$/);
  const events = await mediaEvents(sql, tenant.catalogId, key);
  assert.deepEqual(events.map((e) => e.type), ['media.ingested']);
  assertMediaEvent(events[0]);
  assert.equal(events[0].resourceId, key);
  assert.equal(events[0].data.url, `${base}?size=m&v=2`, 'the event names the normalized URL');
  assert.equal(events[0].data.externalIds.length, 25, 'the items of the registering batch');
});

test('an import line goes through the same registration: new images are queued, known ones are not', async () => {
  origin.serve('/import/new.png', { body: await makeImage('png', 50, 60, 61) });
  origin.serve('/import/known.png', { body: await makeImage('png', 70, 10, 62) });
  expectData(await api.upsertItem(item('IMP-0', [origin.at('/import/known.png')]), opts()), 201);
  await settledItem(service.url, tenant.key, 'IMP-0');
  const file = jsonl([
    item('IMP-1', [origin.at('/import/new.png'), `${origin.at('/import/known.png')}?utm_source=erp`]),
    item('IMP-2', [`${origin.at('/import/new.png')}?utm_source=erp`]),
  ]);
  const jobs = (await mediaJobs(sql, tenant.catalogId)).length;
  const job = await runImport(opts(), file);
  assert.equal(job.status, 'completed');
  const newHash = sourceUrlHash(origin.at('/import/new.png'));
  const queued = (await mediaJobs(sql, tenant.catalogId)).slice(jobs);
  // The registration's job names its items; one a consumer held for the running import is queued
  // again after it, without them (docs/media.md, "Lifecycle").
  assert.deepEqual(queued.filter((j) => j.body.externalIds.length > 0).map((j) => [j.key, j.body.externalIds]), [[newHash, ['IMP-1', 'IMP-2']]]);
  assert.deepEqual([...new Set(queued.map((j) => j.key))], [newHash], 'no job for the known image');
  const settled = await settledItem(service.url, tenant.key, 'IMP-1');
  assert.deepEqual(settled.media.map((m) => [m.status, m.width]), [['ingested', 50], ['ingested', 70]]);
  assert.equal(origin.gets('/import/new.png'), 1);
  assert.equal(origin.gets('/import/known.png'), 1);
});

test('PNG, JPEG and WebP are recognized from their bytes, whatever the Content-Type says', async () => {
  const images = {
    png: await makeImage('png', 64, 48, 1), jpeg: await makeImage('jpeg', 300, 200, 2), webp: await makeImage('webp', 150, 400, 3),
  };
  origin.serve('/fmt/a.png', { body: images.png, contentType: 'image/png' });
  origin.serve('/fmt/b.bin', { body: images.jpeg, contentType: 'application/octet-stream' });
  origin.serve('/fmt/c.webp', { body: images.webp, contentType: 'image/webp', etag: null });
  expectData(await api.upsertItem(item('FMT', ['/fmt/a.png', '/fmt/b.bin', '/fmt/c.webp'].map((p) => origin.at(p))), opts()), 201);
  const settled = await settledItem(service.url, tenant.key, 'FMT');
  assert.deepEqual(settled.media.map((m) => [m.status, m.contentType, m.width, m.height, m.byteSize]), [
    ['ingested', 'image/png', 64, 48, images.png.length],
    ['ingested', 'image/jpeg', 300, 200, images.jpeg.length],
    ['ingested', 'image/webp', 150, 400, images.webp.length],
  ]);
  assert.equal((await asset(origin.at('/fmt/c.webp'))).etag, null, 'no ETag from the origin, none stored');
});

test('an unchanged upsert queues nothing; a changed item whose URLs are known queues nothing either', async () => {
  origin.serve('/known/a.png', { body: await makeImage('png', 40, 40, 11) });
  const payload = item('KNOWN', [origin.at('/known/a.png')], { price: 10 });
  expectData(await api.upsertItem(payload, opts()), 201);
  await settledItem(service.url, tenant.key, 'KNOWN');
  const jobs = (await mediaJobs(sql, tenant.catalogId)).length;
  assert.equal(expectData(await api.upsertItem(payload, opts()), 200).outcome, 'unchanged');
  assert.equal(expectData(await api.upsertItem({ ...payload, price: 11 }, opts()), 200).outcome, 'updated');
  // Another item naming the same image, with a tracking parameter: known too.
  expectData(await api.upsertItem(item('KNOWN-2', [`${origin.at('/known/a.png')}?utm_source=mail`]), opts()), 201);
  assert.equal((await mediaJobs(sql, tenant.catalogId)).length, jobs, 'no job for known URLs');
  assert.equal(origin.gets('/known/a.png'), 1);
  assert.equal((await settledItem(service.url, tenant.key, 'KNOWN-2')).media[0]!.status, 'ingested', 'shown with the shared asset state');
});

/** Moves an asset's check times back past the refresh age (24 h by default). */
const age = (url: string) => sql.query(
  `UPDATE media_assets SET last_checked_at = now() - interval '2 days', updated_at = now() - interval '2 days'
    WHERE catalog_id = $1 AND source_url_hash = $2`, [tenant.catalogId, sourceUrlHash(url)]);
const checkedAfter = (url: string, since: Date) =>
  eventually(async () => { const row = await asset(url); return row.last_checked_at > since ? row : undefined; }, `a check of ${url}`);

test('after the refresh age, a changed item re-checks with HEAD + If-None-Match; a 304 downloads nothing', async () => {
  const url = origin.at('/refresh/a.jpg');
  origin.serve('/refresh/a.jpg', { body: await makeImage('jpeg', 120, 80, 21), contentType: 'image/jpeg', etag: '"v1"' });
  expectData(await api.upsertItem(item('REFRESH', [url], { price: 1 }), opts()), 201);
  await settledItem(service.url, tenant.key, 'REFRESH');
  await age(url);
  const jobs = (await mediaJobs(sql, tenant.catalogId)).length;
  const since = new Date();
  expectData(await api.upsertItem(item('REFRESH', [url], { price: 2 }), opts()), 200);
  expectData(await api.upsertItem(item('REFRESH', [url], { price: 3 }), opts()), 200);
  const queued = (await mediaJobs(sql, tenant.catalogId)).slice(jobs);
  assert.deepEqual(queued.map((j) => [j.key, j.body.refresh]), [[sourceUrlHash(url), true]], 'one refresh job, however many changes');
  const row = await checkedAfter(url, since);
  assert.equal(origin.heads('/refresh/a.jpg'), 1);
  assert.equal(origin.gets('/refresh/a.jpg'), 1, 'not downloaded again');
  assert.equal(row.etag, '"v1"');
  assert.equal(row.status, 'ingested');
});

test('refresh: a new ETag over the same bytes keeps the stored asset; new bytes replace it and emit media.ingested', async () => {
  const url = origin.at('/refresh/b.png');
  const v1 = await makeImage('png', 100, 100, 31);
  origin.serve('/refresh/b.png', { body: v1, etag: '"b1"' });
  expectData(await api.upsertItem(item('REFRESH-B', [url], { price: 1 }), opts()), 201);
  await settledItem(service.url, tenant.key, 'REFRESH-B');
  const stored = await asset(url);

  origin.serve('/refresh/b.png', { body: v1, etag: '"b2"' }); // re-deployed, same content
  await age(url);
  let since = new Date();
  expectData(await api.upsertItem(item('REFRESH-B', [url], { price: 2 }), opts()), 200);
  let row = await checkedAfter(url, since);
  assert.equal(origin.gets('/refresh/b.png'), 2, 'a new ETag is downloaded');
  assert.equal(row.etag, '"b2"');
  assert.equal(row.content_sha256, stored.content_sha256);
  assert.equal(row.storage_path, stored.storage_path);
  assert.equal((await mediaEvents(sql, tenant.catalogId, stored.source_url_hash)).length, 1, 'same bytes: no new event');

  const v2 = await makeImage('png', 200, 50, 32);
  origin.serve('/refresh/b.png', { body: v2, etag: '"b3"' });
  await age(url);
  since = new Date();
  expectData(await api.upsertItem(item('REFRESH-B', [url], { price: 3 }), opts()), 200);
  row = await checkedAfter(url, since);
  assert.equal(origin.gets('/refresh/b.png'), 3);
  assert.equal(row.content_sha256, hash('sha256', v2, 'hex'));
  assert.notEqual(row.storage_path, stored.storage_path);
  const media = (await settledItem(service.url, tenant.key, 'REFRESH-B')).media[0]!;
  assert.deepEqual([media.width, media.height, media.byteSize], [200, 50, v2.length]);
  const events = await mediaEvents(sql, tenant.catalogId, stored.source_url_hash);
  assert.deepEqual(events.map((e) => [e.type, e.data.width]), [['media.ingested', 100], ['media.ingested', 200]]);
});

test('an origin that refuses HEAD is re-checked with a conditional GET', async () => {
  const url = origin.at('/refresh/no-head.png');
  const png = await makeImage('png', 30, 20, 35);
  origin.script('/refresh/no-head.png', (req, res) => {
    if (req.method === 'HEAD') res.writeHead(405, { allow: 'GET' }).end();
    else if (req.headers['if-none-match'] === '"nh1"') res.writeHead(304, { etag: '"nh1"' }).end();
    else res.writeHead(200, { etag: '"nh1"', 'content-type': 'image/png', 'content-length': png.length }).end(png);
  });
  expectData(await api.upsertItem(item('NO-HEAD', [url], { price: 1 }), opts()), 201);
  await settledItem(service.url, tenant.key, 'NO-HEAD');
  await age(url);
  const since = new Date();
  expectData(await api.upsertItem(item('NO-HEAD', [url], { price: 2 }), opts()), 200);
  const row = await checkedAfter(url, since);
  assert.deepEqual([origin.heads('/refresh/no-head.png'), origin.gets('/refresh/no-head.png')], [1, 2]);
  assert.equal(row.status, 'ingested');
  assert.equal(row.attempts, 3, 'GET, then HEAD and the conditional GET');
  assert.equal((await mediaEvents(sql, tenant.catalogId, row.source_url_hash)).length, 1, '304: nothing new');
});

test('a broken response, then a 503, then the image: retried with backoff and ingested', async () => {
  const webp = await makeImage('webp', 90, 60, 41);
  origin.script('/flaky.webp', (_req, res, nth) => {
    if (nth === 1) {
      res.writeHead(200, { 'content-type': 'image/webp', 'content-length': webp.length });
      res.write(webp.subarray(0, 100));
      setTimeout(() => res.destroy(), 20); // cut mid-body
    } else if (nth === 2) res.writeHead(503).end();
    else res.writeHead(200, { 'content-type': 'image/webp', 'content-length': webp.length }).end(webp);
  });
  expectData(await api.upsertItem(item('FLAKY', [origin.at('/flaky.webp')]), opts()), 201);
  const settled = await settledItem(service.url, tenant.key, 'FLAKY');
  assert.equal(settled.media[0]!.status, 'ingested');
  assert.equal(origin.gets('/flaky.webp'), 3);
  assert.equal((await asset(origin.at('/flaky.webp'))).attempts, 3);
});

test('failures end as failed assets with media.ingestion_failed and a reason', async () => {
  const png = await makeImage('png', 300, 300, 51);
  origin.serve('/bad/page.jpg', { body: Buffer.from('<!doctype html><title>Sale!</title>'.repeat(20)), contentType: 'image/jpeg' });
  origin.serve('/bad/bomb.png', { body: decompressionBomb() });
  origin.serve('/bad/truncated.png', { body: png.subarray(0, Math.floor(png.length / 2)) });
  origin.script('/bad/huge.jpg', (_req, res) => {
    // No Content-Length: the cap is enforced while reading.
    res.writeHead(200, { 'content-type': 'image/jpeg' });
    const chunk = Buffer.alloc(1024 * 1024, 0xff);
    let sent = 0;
    const pump = () => { while (sent < 25 && !res.destroyed && res.write(chunk)) sent += 1; if (sent < 25 && !res.destroyed) res.once('drain', () => { sent += 1; pump(); }); else res.end(); };
    pump();
  });
  origin.script('/bad/declared-huge.jpg', (_req, res) => { res.writeHead(200, { 'content-length': 21 * 1024 * 1024 }); res.write('x'); });
  // Never answers: a timeout whatever MEDIA_TIMEOUT_MS is (the socket goes when the client gives up).
  origin.script('/bad/slow.png', () => undefined);
  origin.script('/bad/error.png', (_req, res) => { res.writeHead(500).end('boom'); });
  const cases: Array<[string, string, number]> = [
    ['/bad/missing.png', 'not_found', 1], ['/bad/page.jpg', 'not_an_image', 1], ['/bad/bomb.png', 'too_large', 1],
    ['/bad/truncated.png', 'undecodable', 1], ['/bad/huge.jpg', 'too_large', 1], ['/bad/declared-huge.jpg', 'too_large', 1],
    ['/bad/slow.png', 'timeout', 1 + RETRIES], ['/bad/error.png', 'http_error', 1 + RETRIES],
  ];
  const failedBefore = (await metricValue(service.opsUrl, 'catalog_media_jobs_total', { outcome: 'failed' })) ?? 0;
  expectData(await api.upsertItem(item('BAD', cases.map(([path]) => origin.at(path))), opts()), 201);
  // The slow route's attempts all run to the timeout: the wait is the configured worst case, and then some.
  const settled = await settledItem(service.url, tenant.key, 'BAD', undefined, downloadBudgetMs(service.config.media) + SETTLE_MS);
  for (const [i, [path, reason, gets]] of cases.entries()) {
    const media = settled.media[i]!;
    assert.deepEqual([path, media.status, media.contentType, media.width], [path, 'failed', null, null]);
    // Under Deno a download that timed out was seen once to reach the origin one time more than
    // the attempts the service made and counts (4 GETs for 3, below exact): the runtime's HTTP
    // client, not the service's retries, which the attempt counts check.
    const extra = service.runtime === 'deno' && reason === 'timeout' ? 1 : 0;
    assert.ok(origin.gets(path) >= gets && origin.gets(path) <= gets + extra, `${path}: ${origin.gets(path)} GETs made for ${gets} attempts`);
    const row = await asset(origin.at(path));
    assert.equal(row.failure_reason, reason, `${path}: ${row.last_error}`);
    assert.deepEqual([media.failure?.reason, media.failure?.message, media.failure?.attempts], [reason, row.last_error, gets], path);
    assert.equal(row.attempts, gets);
    const events = await mediaEvents(sql, tenant.catalogId, media.sourceUrlHash);
    assert.deepEqual(events.map((e) => [e.type, e.data.reason]), [['media.ingestion_failed', reason]], path);
    assertMediaEvent(events[0]);
    assert.deepEqual(events[0].data.externalIds, ['BAD']);
  }
  assert.equal((await metricValue(service.opsUrl, 'catalog_media_jobs_total', { outcome: 'failed' }))! - failedBefore, cases.length, 'counted for the media alert');
  // Bodies are written to files as they arrive: none is left behind by a refused or broken one.
  assert.deepEqual(readdirSync(join(storageDir, '.incoming')), []);
});

test('media events reach catalog.events.v1 keyed by their catalog and sourceUrlHash', async () => {
  const written = await mediaEvents(sql, tenant.catalogId);
  const topic = `${service.config.kafkaTopicPrefix}catalog.events.v1`;
  const published = await eventually(async () => {
    const records = await readTopic([...service.config.kafkaBrokers!], topic);
    const media = records.filter((r) => (r.headers['event-type'] ?? '').startsWith('media.'));
    return media.length >= written.length ? media : undefined;
  }, 'media events on Kafka');
  assert.deepEqual(new Set(published.map((r) => JSON.parse(r.value!.toString('utf8')).id)), new Set(written.map((e) => e.id)));
  for (const record of published) {
    const event = JSON.parse(record.value!.toString('utf8'));
    assert.equal(record.key, JSON.stringify([tenant.catalogId, event.resourceId]));
    assert.equal(record.headers['catalog-id'], tenant.catalogId);
    assert.equal(record.headers['schema-version'], '1');
  }
});
