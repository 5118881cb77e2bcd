// The outbound network guard on media downloads: loopback, private and metadata addresses refused after DNS and on every redirect hop.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { makeImage, startImageOrigin } from '../helpers/image-origin.ts';
import type { ImageOrigin } from '../helpers/image-origin.ts';
import { assertMediaEvent, mediaEvents, settledItem } from '../helpers/media.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
// `allowed` stands for an internal CDN the operator lets through (MEDIA_ALLOWED_HOSTS); `internal`
// for anything else on the private network, which must never be reached, directly or by redirect.
let allowed: ImageOrigin;
let internal: ImageOrigin;
let service: TestService;
let tenant: Tenant;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const opts = () => clientOptions(service.url, tenant.key);

before(async () => {
  allowed = await startImageOrigin();
  internal = await startImageOrigin();
  const png = await makeImage('png', 32, 32, 5);
  allowed.serve('/ok.png', { body: png });
  internal.serve('/secret.png', { body: png });
  service = await startTestService(FILE, {
    OUTBOUND_ALLOW_PRIVATE: 'false', // the production default, stated for the reader
    MEDIA_ALLOWED_HOSTS: `127.0.0.1:${allowed.port}`,
    STORAGE_DIR: mkdtempSync(join(tmpdir(), 'catalog-media-guard-')),
    // MEDIA_TIMEOUT_MS stays the default: nothing here times out on purpose, and a shorter one
    // would only let a busy machine turn a quick loopback download into a retry.
  });
  tenant = await service.newTenant();
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await sql?.end();
  await service?.close();
  await allowed?.close();
  await internal?.close();
});

const redirect = (path: string, location: string) =>
  allowed.script(path, (_req, res) => { res.writeHead(302, { location }).end(); });

test('refused: loopback by literal and by name, the metadata address, and redirects to them; allowed hops are followed', async () => {
  redirect('/to-literal.png', internal.at('/secret.png'));
  redirect('/to-name.png', `http://localhost:${internal.port}/secret.png`);
  redirect('/to-metadata.png', 'http://169.254.169.254/latest/meta-data/iam/security-credentials/');
  redirect('/to-ipv6.png', `http://[::ffff:127.0.0.1]:${internal.port}/secret.png`);
  redirect('/hop-1.png', '/hop-2.png');
  redirect('/hop-2.png', allowed.at('/ok.png'));
  redirect('/loop.png', '/loop.png');
  const cases: Array<[string, 'ingested' | 'failed', string | null]> = [
    [internal.at('/secret.png'), 'failed', 'refused'],
    [`http://localhost:${internal.port}/secret.png?direct`, 'failed', 'refused'], // refused after DNS resolution
    ['http://169.254.169.254/latest/meta-data/', 'failed', 'refused'],
    [allowed.at('/to-literal.png'), 'failed', 'refused'],
    [allowed.at('/to-name.png'), 'failed', 'refused'],
    [allowed.at('/to-metadata.png'), 'failed', 'refused'],
    [allowed.at('/to-ipv6.png'), 'failed', 'refused'],
    [allowed.at('/hop-1.png'), 'ingested', null],
    [allowed.at('/loop.png'), 'failed', 'http_error'],
  ];
  expectData(await api.upsertItem({
    externalSystem: 'erp', externalId: 'GUARD', name: 'Guarded',
    media: cases.map(([url], i) => ({ url, role: i === 0 ? 'primary' : 'gallery', sortOrder: i })),
  }, opts()), 201);
  const settled = await settledItem(service.url, tenant.key, 'GUARD');
  for (const [i, [url, status, reason]] of cases.entries()) {
    const media = settled.media[i]!;
    assert.equal(media.status, status, url);
    const events = await mediaEvents(sql, tenant.catalogId, media.sourceUrlHash);
    assert.equal(events.length, 1, url);
    assertMediaEvent(events[0]);
    if (reason) assert.equal(events[0].data.reason, reason, `${url}: ${events[0].data.message}`);
  }
  assert.equal(internal.totalGets(), 0, 'nothing on the private network was ever reached');
  assert.equal(allowed.gets('/to-literal.png'), 1, 'a refusal is not retried');
  assert.equal(allowed.gets('/ok.png'), 1, 'the redirect chain reached the image');
  assert.equal(allowed.gets('/loop.png'), 6, 'redirects stop after 5 hops');
  const refused = await mediaEvents(sql, tenant.catalogId, settled.media[1]!.sourceUrlHash);
  assert.match(refused[0].data.message, /localhost resolves to (127\.0\.0\.1|::1)/);
});
