// The platform's answers to bad input: every failure in the spec's envelope, never a 500.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { parse } from 'yaml';
import * as client from '../../generated/client.ts';
import type { ItemPayload } from '../../generated/client.ts';
import { clientOptions } from '../helpers/client.ts';
import { checkedFetch } from '../helpers/contract-check.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let tenant: Tenant;
let api: string;

const json = (key: string, body: string, contentType = 'application/json') => ({
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
  body,
});

before(async () => {
  service = await startTestService(FILE);
  tenant = await service.newTenant();
  api = `${service.url}/api/v1/catalog`;
});
after(async () => {
  await service?.close();
});

test('GET /openapi.json serves the contract without a key, its servers this service (relative, so /docs works on any port) and this deployment, this deployment first outside the prefix', async () => {
  const { status, data } = await client.getOpenApi(clientOptions(service.url));
  assert.equal(status, 200);
  const contract = parse(readFileSync('openapi.yaml', 'utf8'));
  const served = data as typeof contract;
  const here = 'This service, at the address this document was read from';
  const deployment = 'This deployment (production)';
  assert.deepEqual(served.servers, [{ url: '/api/v1/catalog', description: here }, { url: `${service.config.publicBaseUrl}/api/v1/catalog`, description: deployment }]);
  for (const [path, item] of Object.entries(contract.paths) as Array<[string, { servers?: unknown[] }]>) {
    const servedItem = served.paths[path] as { servers?: unknown[] };
    // Absolute first: a generated client joins it and the path as they are ('/' would give '//storage/…').
    if (item.servers) assert.deepEqual(servedItem.servers, [{ url: service.config.publicBaseUrl, description: deployment }, { url: '/', description: here }], path);
    assert.deepEqual({ ...servedItem, servers: undefined }, { ...item, servers: undefined }, path);
  }
  assert.deepEqual({ ...served, servers: undefined, paths: undefined }, { ...contract, servers: undefined, paths: undefined });
  // Resolved against where the document was read, the first server is this very service.
  assert.equal(new URL(served.servers[0].url, `${service.url}/api/v1/catalog/openapi.json`).href, `${service.url}/api/v1/catalog`);
});

test('malformed JSON is a 400 validation_error naming the body', async () => {
  const { response, body } = await checkedFetch(`${api}/items/upsert`, json(tenant.key, '{"externalSystem": "erp",'));
  assert.equal(response.status, 400);
  assert.equal(body.error.code, 'validation_error');
  assert.equal(body.error.details[0].path, 'body');
});

test('a wrong content type is a 415', async () => {
  const { response, body } = await checkedFetch(`${api}/items/upsert`, json(tenant.key, 'name=x', 'application/x-www-form-urlencoded'));
  assert.equal(response.status, 415);
  assert.equal(body.error.code, 'unsupported_media_type');
});

test('an oversized body is a 413 before it is read whole', async () => {
  const big = JSON.stringify({ externalSystem: 'erp', externalId: '1', name: 'x', description: 'y'.repeat(2 * 1024 * 1024) });
  const { response, body } = await checkedFetch(`${api}/items/upsert`, json(tenant.key, big));
  assert.equal(response.status, 413);
  assert.equal(body.error.code, 'payload_too_large');
});

test('unknown fields and wrong types are 400s with a path per problem', async () => {
  const payload = { externalSystem: 'erp', externalId: 'A-1', name: 42, colour: 'red', price: 'cheap' } as unknown as ItemPayload;
  const answer = await client.upsertItem(payload, clientOptions(service.url, tenant.key));
  assert.equal(answer.status, 400);
  if (answer.status !== 400) return;
  assert.equal(answer.data.error.code, 'validation_error');
  const details = answer.data.error.details ?? [];
  assert.deepEqual(details.map((d) => d.path).sort(), ['colour', 'name', 'price']);
  assert.equal(details.find((d) => d.path === 'colour')?.message, 'is not a known field');
});

test('a missing, malformed, unknown or revoked key is a 401; a missing scope is a 403', async () => {
  const attempts: Array<Record<string, string>> = [{}, { authorization: 'Token abc' }, { authorization: 'Bearer cat_live_doesnotexist' }];
  for (const headers of attempts) {
    const answer = await client.listItems({}, clientOptions(service.url, undefined, headers));
    assert.equal(answer.status, 401, JSON.stringify(headers));
    assert.equal((answer.data as client.ErrorResponse).error.code, 'unauthorized');
  }
  const revoked = await service.newTenant();
  await service.orm.em.getConnection().execute('update api_keys set revoked_at = now() where id = ?', [revoked.keyId]);
  const refused = await client.listItems({}, clientOptions(service.url, revoked.key));
  assert.equal(refused.status, 401);
  const readOnly = await service.newTenant({ scopes: ['catalog:read'] });
  const forbidden = await client.upsertItem({ externalSystem: 'erp', externalId: 'A-1', name: 'Mug' }, clientOptions(service.url, readOnly.key));
  assert.equal(forbidden.status, 403);
  if (forbidden.status !== 403) return;
  assert.equal(forbidden.data.error.code, 'forbidden');
  assert.match(forbidden.data.error.message, /catalog:write/);
});

test('unknown routes are 404 and wrong methods 405 with Allow, both in the envelope', async () => {
  const headers = { authorization: `Bearer ${tenant.key}` };
  const missing = await checkedFetch(`${api}/no-such-thing`, { headers });
  assert.equal(missing.response.status, 404);
  assert.equal(missing.body.error.code, 'not_found');
  const wrong = await checkedFetch(`${api}/items/upsert`, { method: 'PUT', headers });
  assert.equal(wrong.response.status, 405);
  assert.equal(wrong.body.error.code, 'method_not_allowed');
  assert.equal(wrong.response.headers.get('allow'), 'POST');
  const outside = await checkedFetch(`${service.url}/nowhere`);
  assert.equal(outside.response.status, 404);
  assert.equal(outside.body.error.code, 'not_found');
});

test('X-Request-Id: a sane incoming id is kept, anything else is replaced', async () => {
  const kept = await checkedFetch(`${api}/openapi.json`, { headers: { 'x-request-id': 'trace-abc-12345' } });
  assert.equal(kept.response.headers.get('x-request-id'), 'trace-abc-12345');
  const replaced = await checkedFetch(`${api}/openapi.json`, { headers: { 'x-request-id': 'bad id with spaces' } });
  assert.match(replaced.response.headers.get('x-request-id')!, /^req_[0-9a-f]{32}$/);
  const error = await checkedFetch(`${api}/items`, { headers: { 'x-request-id': 'trace-err-12345' } });
  assert.equal(error.body.error.requestId, 'trace-err-12345', 'errors quote the request id');
});

test('health, readiness and docs answer outside the prefix, metrics on the operations port', async () => {
  const health = await checkedFetch(`${service.url}/healthz`);
  assert.equal(health.response.status, 200);
  const ready = await checkedFetch(`${service.url}/readyz`);
  assert.equal(ready.response.status, 200, JSON.stringify(ready.body));
  assert.deepEqual(ready.body.checks, { database: 'ok', kafka: 'ok' });
  const metrics = await checkedFetch(`${service.opsUrl}/metrics`);
  assert.match(metrics.body, /catalog_http_requests_total\{/);
  assert.match(metrics.body, /catalog_db_statement_duration_seconds_count\{[^}]*statement="access\.authenticate_keys"[^}]*\} [1-9]/, 'statement times by name');
  const docs = await checkedFetch(`${service.url}/docs`);
  assert.match(docs.body, /<div id="reference">/);
  assert.doesNotMatch(docs.body, /https?:\/\//, 'no asset comes from a CDN');
  const bundle = await fetch(`${service.url}/docs/assets/swagger-ui-bundle.js`);
  assert.equal(bundle.status, 200);
  await bundle.arrayBuffer();
});

test('query parameters named __proto__ or constructor are refused by name like any unknown parameter, not a 500', async () => {
  const headers = { authorization: `Bearer ${tenant.key}` };
  for (const [query, path] of [['__proto__=x', 'query.__proto__'], ['__proto__=x&__proto__=y', 'query.__proto__'], ['limit=1&constructor=x', 'query.constructor'], ['zz=1', 'query.zz']]) {
    const { response, body } = await checkedFetch(`${api}/items?${query}`, { headers });
    assert.equal(response.status, 400, `${query}: ${JSON.stringify(body)}`);
    assert.deepEqual(body.error.details.map((d: { path: string }) => d.path), [path], query);
  }
});

test('an item payload with an undeclared query parameter is refused by name, before anything is stored', async () => {
  const externalId = `query-${Date.now()}`;
  const body = JSON.stringify({ externalSystem: 'erp', externalId, name: 'Queried', price: 1 });
  const { response, body: answer } = await checkedFetch(`${api}/items/upsert?zz=1`, json(tenant.key, body));
  assert.equal(response.status, 400, JSON.stringify(answer));
  assert.deepEqual(answer.error.details.map((d: { path: string }) => d.path), ['query.zz']);
  const stored = await checkedFetch(`${api}/items/erp/${externalId}`, { headers: { authorization: `Bearer ${tenant.key}` } });
  assert.equal(stored.response.status, 404);
  const accepted = await checkedFetch(`${api}/items/upsert`, json(tenant.key, body));
  assert.equal(accepted.response.status, 201);
});

test('GET /openapi.json refuses an unknown query parameter (400) and an invalid key (401), as its contract says', async () => {
  const unknown = await checkedFetch(`${api}/openapi.json?zz=1`);
  assert.equal(unknown.response.status, 400);
  assert.equal(unknown.body.error.details[0].path, 'query.zz');
  const invalidKey = await checkedFetch(`${api}/openapi.json`, { headers: { authorization: 'Bearer cat_live_unknown' } });
  assert.equal(invalidKey.response.status, 401);
  assert.equal(invalidKey.body.error.code, 'unauthorized');
});
