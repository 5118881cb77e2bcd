// Polite fetching: a per-host limit, a slow host that cannot starve the others, and a host's Retry-After honoured for all its downloads.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { ItemPayload } from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { makeImage, startImageOrigin } from '../helpers/image-origin.ts';
import type { ImageOrigin } from '../helpers/image-origin.ts';
import { settledItem } from '../helpers/media.ts';
import { startImportService } from '../helpers/imports.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const PER_HOST = 2;
const RETRY_AFTER_SECONDS = 2;
let slow: ImageOrigin;
let fast: ImageOrigin;
let service: TestService;
let tenant: Tenant;
const opts = () => clientOptions(service.url, tenant.key);
const item = (externalId: string, urls: string[]): ItemPayload => ({
  externalSystem: 'erp', externalId, name: `Item ${externalId}`, media: urls.map((url, i) => ({ url, sortOrder: i })),
});

before(async () => {
  [slow, fast] = [await startImageOrigin(), await startImageOrigin()];
  service = await startImportService(FILE, {
    OUTBOUND_ALLOW_PRIVATE: 'true', STORAGE_DIR: mkdtempSync(join(tmpdir(), 'catalog-media-polite-')),
    MEDIA_CONCURRENCY: '4', MEDIA_HOST_CONCURRENCY: String(PER_HOST), MEDIA_RETRIES: '2',
    // The slow host's answers are held until the test lets them go: far under this timeout.
    MEDIA_TIMEOUT_MS: '120000',
  });
  tenant = await service.newTenant();
});
after(async () => {
  await service?.close();
  await slow?.close();
  await fast?.close();
});

test("a slow host gets at most MEDIA_HOST_CONCURRENCY downloads at once, and the other hosts' images arrive meanwhile", async () => {
  const png = await makeImage('png', 32, 32, 1);
  const held: ServerResponse[] = [];
  let inFlight = 0;
  let most = 0;
  for (let i = 0; i < 6; i++) {
    slow.script(`/slow-${i}.png`, (_req, res) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      res.once('close', () => { inFlight -= 1; });
      held.push(res);
    });
  }
  for (let i = 0; i < 4; i++) fast.serve(`/fast-${i}.png`, { body: await makeImage('png', 32, 32, 10 + i) });

  expectData(await api.upsertItem(item('SLOW', Array.from({ length: 6 }, (_, i) => slow.at(`/slow-${i}.png`))), opts()), 201);
  // The slow host's first downloads are under way (and held) before the fast host's item exists.
  await settledUntil(() => held.length >= PER_HOST, 'the slow host to be asked');
  expectData(await api.upsertItem(item('FAST', Array.from({ length: 4 }, (_, i) => fast.at(`/fast-${i}.png`))), opts()), 201);
  const quick = await settledItem(service.url, tenant.key, 'FAST');
  assert.deepEqual(quick.media.map((m) => m.status), ['ingested', 'ingested', 'ingested', 'ingested']);
  const waiting = expectData(await api.getItem('erp', 'SLOW', opts()), 200);
  assert.ok(waiting.media.every((m) => m.status === 'pending'), 'the slow host is still being waited on');
  assert.equal(most, PER_HOST, 'downloads in flight to the slow host');

  // Let every held answer go, and those still to come, as soon as they arrive.
  const release = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length }).end(png);
  for (let i = 0; i < 6; i++) slow.script(`/slow-${i}.png`, (_req, res) => release(res));
  held.splice(0).forEach(release);
  const done = await settledItem(service.url, tenant.key, 'SLOW');
  assert.ok(done.media.every((m) => m.status === 'ingested'));
  assert.ok(most <= PER_HOST, `at most ${PER_HOST} at once, saw ${most}`);
});

test("a 503 with Retry-After pauses that host's downloads, this one's retry and the next ones, for the time it asks", async () => {
  const png = await makeImage('png', 24, 24, 40);
  let refusedAt = 0;
  const busyTimes: number[] = [];
  slow.script('/busy.png', (_req, res, nth) => {
    busyTimes.push(Date.now());
    if (nth === 1) {
      refusedAt = Date.now();
      res.writeHead(503, { 'retry-after': String(RETRY_AFTER_SECONDS), 'content-type': 'text/plain' }).end('busy');
      return;
    }
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length }).end(png);
  });
  let laterAt = 0;
  slow.script('/later.png', (_req, res) => {
    laterAt = Date.now();
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length }).end(png);
  });
  expectData(await api.upsertItem(item('BUSY', [slow.at('/busy.png')]), opts()), 201);
  await settledUntil(() => refusedAt > 0, 'the host to answer 503');
  expectData(await api.upsertItem(item('LATER', [slow.at('/later.png')]), opts()), 201);
  const busy = await settledItem(service.url, tenant.key, 'BUSY');
  const later = await settledItem(service.url, tenant.key, 'LATER');
  assert.deepEqual([busy.media[0]!.status, later.media[0]!.status], ['ingested', 'ingested']);
  assert.equal(busyTimes.length, 2);
  // Timers fire no earlier than asked; a little slack for the clock readings on either side.
  const pause = RETRY_AFTER_SECONDS * 1000 - 50;
  assert.ok(busyTimes[1]! - refusedAt >= pause, `retried ${busyTimes[1]! - refusedAt} ms after the 503`);
  assert.ok(laterAt - refusedAt >= pause, `the host's next download started ${laterAt - refusedAt} ms after the 503`);
});

/** Polls a condition the origins' handlers set. */
async function settledUntil(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
