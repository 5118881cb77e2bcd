// A catalog's images wait for its own import to end; while a consumers process runs an import, other catalogs' images go on, at most MEDIA_CONCURRENCY_WHILE_IMPORTING at a time.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import * as api from '../../generated/client.ts';
import type { ImportJob } from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import type { Tenant } from '../helpers/service.ts';
import { item, waitForJob } from '../helpers/imports.ts';
import { makeImage } from '../helpers/image-origin.ts';
import { sqlClient } from '../helpers/database.ts';
import { eventually, startMediaBed } from '../helpers/media.ts';
import type { MediaBed } from '../helpers/media.ts';

const FILE = import.meta.filename;
const IMAGES = 10;
const OWN_IMAGES = 3;
const WHILE_IMPORTING = 2;
let bed: MediaBed;
// The catalog the held images belong to; bed.tenant's catalog runs the import.
let other: Tenant;
// Requests for the importing catalog's own images, served at once.
let ownHits = 0;
// The feed: one line, which updates an item the test keeps locked, so the import job stays
// processing until the test lets it go (`letImportEnd`).
const feed = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(`${JSON.stringify(item('FEED-0', { price: 11 }))}\n`);
});
let locker: pg.Client;
const letImportEnd = () => locker.query('COMMIT');
// Image downloads are held until released, so the test sees how many the consumer lets run at once.
let inFlight = 0;
let mostInFlight = 0;
let release: () => void = () => undefined;
const released = new Promise<void>((resolve) => { release = resolve; });

before(async () => {
  bed = await startMediaBed(FILE, {
    MEDIA_CONCURRENCY: '32', MEDIA_CONCURRENCY_WHILE_IMPORTING: String(WHILE_IMPORTING), MEDIA_HOST_CONCURRENCY: '32',
    MEDIA_TIMEOUT_MS: '120000', MEDIA_RETRIES: '0',
  });
  other = await bed.service.newTenant();
  const body = await makeImage('png', 16, 16);
  for (let n = 0; n < OWN_IMAGES; n++) {
    bed.origin.script(`/own/${n}.png`, (_req, res) => {
      ownHits += 1;
      res.writeHead(200, { 'content-type': 'image/png' }).end(body);
    });
  }
  for (let n = 0; n < IMAGES; n++) {
    bed.origin.script(`/held/${n}.png`, (_req, res) => {
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      res.on('close', () => { inFlight -= 1; });
      void released.then(() => res.writeHead(200, { 'content-type': 'image/png' }).end(body));
    });
  }
  await new Promise<void>((resolve) => feed.listen(0, '127.0.0.1', resolve));
  locker = await sqlClient(bed.service.databaseUrl);
});

after(async () => {
  await locker?.end();
  release();
  feed.closeAllConnections();
  await new Promise((resolve) => feed.close(resolve));
  await bed?.close();
});

const leased = async (catalogId: string) => (await bed.sql.query(
  `SELECT count(*)::int AS n FROM media_assets WHERE catalog_id = $1 AND leased_until > now() AND leased_until < 'infinity'`, [catalogId])).rows[0].n as number;
const heldForImport = async (catalogId: string) => (await bed.sql.query(
  `SELECT count(*)::int AS n FROM media_assets WHERE catalog_id = $1 AND leased_until = 'infinity' AND status = 'pending'`, [catalogId])).rows[0].n as number;
const ingested = async (catalogId: string) => (await bed.sql.query(
  `SELECT count(*) FILTER (WHERE status = 'ingested')::int AS n FROM media_assets WHERE catalog_id = $1`, [catalogId])).rows[0].n as number;

test('a catalog\'s images wait for its import; another catalog\'s go on, MEDIA_CONCURRENCY_WHILE_IMPORTING at a time, and all at once after it', async () => {
  const opts = clientOptions(bed.service.url, bed.tenant.key);
  expectData(await api.upsertItem(item('FEED-0'), opts), 201);
  await locker.query('BEGIN');
  await locker.query(`SELECT 1 FROM items WHERE catalog_id = $1 AND external_id = 'FEED-0' FOR UPDATE`, [bed.tenant.catalogId]);
  const started = await api.createImport({ source: { url: `http://127.0.0.1:${(feed.address() as AddressInfo).port}/feed.jsonl` } }, {}, opts);
  assert.equal(started.status, 202, JSON.stringify(started.data));
  const job = (started.data as { data: ImportJob }).data;
  await eventually(async () => (expectData(await api.getImport(job.id, opts), 200).status === 'processing' ? true : undefined), 'the import job processing');

  // The importing catalog names images of its own beside the import, through the API.
  const own = Array.from({ length: OWN_IMAGES }, (_, n) => ({ ...item(`OWN-${n}`), media: [{ url: bed.origin.at(`/own/${n}.png`), role: 'primary' as const, sortOrder: 0 }] }));
  assert.equal(expectData(await api.bulkUpsertItems({ items: own }, opts), 200).summary.failed, 0);
  const otherOpts = clientOptions(bed.service.url, other.key);
  const items = Array.from({ length: IMAGES }, (_, n) => ({ ...item(`IMG-${n}`), media: [{ url: bed.origin.at(`/held/${n}.png`), role: 'primary' as const, sortOrder: 0 }] }));
  assert.equal(expectData(await api.bulkUpsertItems({ items }, otherOpts), 200).summary.failed, 0);
  // The other catalog's jobs are leased and downloaded as far as the import lets them; the
  // importing catalog's are held for its import, not one downloaded.
  await eventually(async () => ((await leased(other.catalogId)) === IMAGES && inFlight === WHILE_IMPORTING ? true : undefined), `all ${IMAGES} jobs leased, ${WHILE_IMPORTING} downloading`);
  await eventually(async () => ((await heldForImport(bed.tenant.catalogId)) === OWN_IMAGES ? true : undefined), `the importing catalog's ${OWN_IMAGES} images held for its import`);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal(mostInFlight, WHILE_IMPORTING, 'images in flight while the import ran');
  assert.equal(ownHits, 0, 'the importing catalog\'s images were not fetched while its import ran');
  const ownItem = expectData(await api.getItem('erp', 'OWN-0', opts), 200);
  assert.equal(ownItem.media[0]!.status, 'pending');

  await letImportEnd();
  const done = await waitForJob(opts, job.id);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  // No import runs: the held images are queued and ingested, and the waiting ones go at once, past the limit the import set.
  await eventually(async () => ((await ingested(bed.tenant.catalogId)) === OWN_IMAGES ? true : undefined), 'the importing catalog\'s images ingested once its import ended');
  assert.equal(ownHits, OWN_IMAGES, 'each held image fetched once');
  await eventually(async () => (inFlight === IMAGES ? true : undefined), `all ${IMAGES} images downloading once the import ended`);
  release();
  await eventually(async () => ((await ingested(other.catalogId)) === IMAGES ? true : undefined), 'every image ingested');
  assert.equal(await heldForImport(bed.tenant.catalogId), 0);
});
