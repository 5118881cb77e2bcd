// Browsers on other origins: CORS_ALLOWED_ORIGINS lets named origins call the API and read its answers; everything else stays as without CORS.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const SHOP = 'https://shop.example';
let open: TestService;
let closed: TestService;
let tenant: Tenant;

before(async () => {
  open = await startTestService(FILE, { CORS_ALLOWED_ORIGINS: `${SHOP},http://localhost:3000` });
  // The same database, CORS off (the default).
  closed = await startTestService(FILE, { DATABASE_URL: open.databaseUrl, ROLE: 'api' });
  tenant = await open.newTenant();
});
after(async () => {
  await closed?.close();
  await open?.close();
});

const preflight = (service: TestService, origin: string, path = '/api/v1/catalog/items/upsert') => fetch(`${service.url}${path}`, {
  method: 'OPTIONS',
  headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
});

test('a preflight from an allowed origin is a 204 naming what it may send; the answer itself lets it read the headers', async () => {
  const answer = await preflight(open, SHOP);
  assert.equal(answer.status, 204);
  assert.equal(answer.headers.get('access-control-allow-origin'), SHOP);
  assert.match(answer.headers.get('access-control-allow-methods') ?? '', /\bPOST\b/);
  for (const header of ['Authorization', 'Content-Type', 'Idempotency-Key']) assert.match(answer.headers.get('access-control-allow-headers') ?? '', new RegExp(header));
  assert.equal(answer.headers.get('access-control-max-age'), '600');
  assert.match(answer.headers.get('vary') ?? '', /Origin/);

  const read = await fetch(`${open.url}/api/v1/catalog/items`, { headers: { origin: SHOP, authorization: `Bearer ${tenant.key}` } });
  assert.equal(read.status, 200);
  assert.equal(read.headers.get('access-control-allow-origin'), SHOP);
  assert.match(read.headers.get('access-control-expose-headers') ?? '', /X-Request-Id.*X-RateLimit-Remaining/);
  // An error answer carries them too: a browser script can read why it was refused.
  const refused = await fetch(`${open.url}/api/v1/catalog/items`, { headers: { origin: SHOP } });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get('access-control-allow-origin'), SHOP);
});

test('another origin gets no CORS headers, and its preflight a 403 in the envelope', async () => {
  const answer = await preflight(open, 'https://evil.example');
  assert.equal(answer.status, 403);
  const body = await answer.json() as { error: { code: string; message: string } };
  assert.equal(body.error.code, 'forbidden');
  assert.match(body.error.message, /https:\/\/evil\.example may not call this service/);
  const read = await fetch(`${open.url}/api/v1/catalog/items`, { headers: { origin: 'https://evil.example', authorization: `Bearer ${tenant.key}` } });
  assert.equal(read.headers.get('access-control-allow-origin'), null);
  assert.match(read.headers.get('vary') ?? '', /Origin/);
});

test('with CORS off (the default) nothing changes: OPTIONS is a 405, no CORS header on any answer', async () => {
  const answer = await preflight(closed, SHOP);
  assert.equal(answer.status, 405);
  const read = await fetch(`${closed.url}/api/v1/catalog/items`, { headers: { origin: SHOP, authorization: `Bearer ${tenant.key}` } });
  assert.equal(read.status, 200);
  assert.equal(read.headers.get('access-control-allow-origin'), null);
  assert.equal(read.headers.get('vary'), null);
});
