// A consumers process killed (SIGKILL) in the middle of a download loses no image: its job's lease lapses and another process ingests it.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { LEASE_RENEW_MS, LEASE_SECONDS } from '../../consumers/media/job-queue.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { makeImage, startImageOrigin } from '../helpers/image-origin.ts';
import type { ImageOrigin } from '../helpers/image-origin.ts';
import { SETTLE_MS, mediaEvents, settledItem } from '../helpers/media.ts';
import { startConsumersProcess } from '../helpers/consumers-process.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const STORAGE_DIR = mkdtempSync(join(tmpdir(), 'catalog-media-crash-'));
const WORKER_ENV = { OUTBOUND_ALLOW_PRIVATE: 'true', STORAGE_DIR, MEDIA_TIMEOUT_MS: '120000' };
let origin: ImageOrigin;
let service: TestService;
let tenant: Tenant;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const children = new Set<ChildProcess>();

const startConsumers = (name: string) => startConsumersProcess({ file: FILE, databaseUrl: service.databaseUrl, env: WORKER_ENV, name, children });

before(async () => {
  origin = await startImageOrigin();
  // This process serves the API only; the media consumer runs in children.
  service = await startTestService(FILE, { ...WORKER_ENV, ROLE: 'api' });
  tenant = await service.newTenant();
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await sql?.end();
  await service?.close();
  await origin?.close();
});

test('SIGKILL mid-download: the lease lapses, another consumers process ingests the image, one media.ingested', async () => {
  const png = await makeImage('png', 64, 48, 5);
  const held: ServerResponse[] = [];
  origin.script('/held.png', (_req, res, nth) => {
    if (nth === 1) held.push(res);
    else res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length }).end(png);
  });
  const first = await startConsumers('consumers 1');
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'CRASH', name: 'Crash', media: [{ url: origin.at('/held.png') }] },
    clientOptions(service.url, tenant.key)), 201);
  const deadline = Date.now() + SETTLE_MS;
  while (held.length === 0) {
    assert.ok(Date.now() < deadline, 'the first consumer never asked for the image');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // Its Kafka offset is committed (the job was taken), the download in flight: only the lease remembers it.
  first.kill('SIGKILL');
  await new Promise((resolve) => first.once('exit', resolve));
  held.splice(0).forEach((res) => res.destroy());
  await startConsumers('consumers 2');
  const settled = await settledItem(service.url, tenant.key, 'CRASH', undefined, LEASE_SECONDS * 1000 + 2 * LEASE_RENEW_MS + SETTLE_MS);
  assert.equal(settled.media[0]!.status, 'ingested');
  assert.equal(origin.gets('/held.png'), 2, 'asked once by each process');
  const events = await mediaEvents(sql, tenant.catalogId, settled.media[0]!.sourceUrlHash);
  assert.deepEqual(events.map((e) => e.type), ['media.ingested']);
  const { rows } = await sql.query('SELECT leased_until FROM media_assets WHERE id = $1', [settled.media[0]!.assetId]);
  assert.equal(rows[0].leased_until, null, 'the lease ends with the job');
});
