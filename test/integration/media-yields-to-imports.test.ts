// While a consumers process runs an import job its images in flight drop to MEDIA_CONCURRENCY_WHILE_IMPORTING, and go back to full width once no import runs.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { ImportJob } from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { item, waitForJob } from '../helpers/imports.ts';
import { makeImage } from '../helpers/image-origin.ts';
import { eventually, startMediaBed } from '../helpers/media.ts';
import type { MediaBed } from '../helpers/media.ts';

const FILE = import.meta.filename;
const IMAGES = 10;
const WHILE_IMPORTING = 2;
let bed: MediaBed;
// The feed: its first lines at once, then one a second until `endFeed`, so the import job runs as long as the test needs.
const feed = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/x-ndjson' });
  res.write(`${JSON.stringify(item('FEED-0'))}\n`);
  let n = 1;
  const timer = setInterval(() => res.write(`${JSON.stringify(item(`FEED-${n++}`))}\n`), 1000);
  feeds.push({ res, timer });
});
const feeds: Array<{ res: ServerResponse; timer: NodeJS.Timeout }> = [];
const endFeed = () => { for (const { res, timer } of feeds.splice(0)) { clearInterval(timer); res.end(); } };
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
  const body = await makeImage('png', 16, 16);
  for (let n = 0; n < IMAGES; n++) {
    bed.origin.script(`/held/${n}.png`, (_req, res) => {
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      res.on('close', () => { inFlight -= 1; });
      void released.then(() => res.writeHead(200, { 'content-type': 'image/png' }).end(body));
    });
  }
  await new Promise<void>((resolve) => feed.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  endFeed();
  release();
  feed.closeAllConnections();
  await new Promise((resolve) => feed.close(resolve));
  await bed?.close();
});

const leased = async () => (await bed.sql.query(`SELECT count(*)::int AS n FROM media_assets WHERE leased_until > now()`)).rows[0].n as number;

test('images wait for an import: at most MEDIA_CONCURRENCY_WHILE_IMPORTING in flight while it runs, every one at once after it', async () => {
  const opts = clientOptions(bed.service.url, bed.tenant.key);
  const started = await api.createImport({ source: { url: `http://127.0.0.1:${(feed.address() as AddressInfo).port}/feed.jsonl` } }, {}, opts);
  assert.equal(started.status, 202, JSON.stringify(started.data));
  const job = (started.data as { data: ImportJob }).data;
  await eventually(async () => (feeds.length > 0 ? true : undefined), 'the import job reading its feed');

  const items = Array.from({ length: IMAGES }, (_, n) => ({ ...item(`IMG-${n}`), media: [{ url: bed.origin.at(`/held/${n}.png`), role: 'primary' as const, sortOrder: 0 }] }));
  assert.equal(expectData(await api.bulkUpsertItems({ items }, opts), 200).summary.failed, 0);
  // The process holds every image's job (each asset leased to it), and downloads only as many as it may.
  await eventually(async () => ((await leased()) === IMAGES && inFlight === WHILE_IMPORTING ? true : undefined), `all ${IMAGES} jobs leased, ${WHILE_IMPORTING} downloading`);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal(mostInFlight, WHILE_IMPORTING, 'images in flight while the import ran');

  endFeed();
  const done = await waitForJob(opts, job.id);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  // No import runs: the waiting images go at once, past the limit the import set.
  await eventually(async () => (inFlight === IMAGES ? true : undefined), `all ${IMAGES} images downloading once the import ended`);
  release();
  await eventually(async () => {
    const { rows } = await bed.sql.query(`SELECT count(*) FILTER (WHERE status = 'ingested')::int AS n FROM media_assets`);
    return rows[0].n === IMAGES ? true : undefined;
  }, 'every image ingested');
});
