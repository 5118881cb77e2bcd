// What a client can send never earns a 500 nor fails another client's request: text Postgres cannot store, bad encodings, out-of-range values, huge bodies.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { ItemPayload } from '../../generated/client.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { checkedFetch } from '../helpers/contract-check.ts';
import { sqlClient } from '../helpers/database.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let tenant: Tenant;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const opts = () => clientOptions(service.url, tenant.key);
const prefix = () => `${service.url}/api/v1/catalog`;
const auth = () => ({ authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' });
const item = (id: string, overrides: Partial<ItemPayload> = {}): ItemPayload => ({ externalSystem: 'erp', externalId: id, name: 'An item', ...overrides });
const pathsOf = (body: { error?: { details?: Array<{ path: string }> } }) => (body.error?.details ?? []).map((d) => d.path);

before(async () => {
  service = await startTestService(FILE);
  tenant = await service.newTenant();
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await sql?.end();
  await service?.close();
});

test('NUL and lone surrogates are a 400 with the field path, in a body, a path or a query parameter', async () => {
  const nul = await checkedFetch(`${prefix()}/items/upsert`, { method: 'POST', headers: auth(), body: JSON.stringify(item('a\u0000b', { tags: ['ok', 'x\u0000'] })) });
  assert.equal(nul.response.status, 400);
  assert.deepEqual(pathsOf(nul.body).sort(), ['externalId', 'tags.1']);
  // JSON.stringify escapes a lone surrogate as \ud800, which is how a client's JSON carries it.
  const surrogate = await checkedFetch(`${prefix()}/items/upsert`, { method: 'POST', headers: auth(), body: JSON.stringify(item('x', { metadata: { note: '\ud800' } })) });
  assert.equal(surrogate.response.status, 400);
  assert.deepEqual(pathsOf(surrogate.body), ['metadata.note']);
  const inPath = await checkedFetch(`${prefix()}/items/erp/a%00b`, { headers: auth() });
  assert.equal(inPath.response.status, 400);
  assert.deepEqual(pathsOf(inPath.body), ['path.externalId']);
  const inQuery = await checkedFetch(`${prefix()}/items?sku=a%00b`, { headers: auth() });
  assert.equal(inQuery.response.status, 400);
  assert.deepEqual(pathsOf(inQuery.body), ['query.sku']);
  const { rows } = await sql.query('SELECT count(*)::int AS n FROM items');
  assert.equal(rows[0].n, 0, 'nothing was written');
});

test('a path segment that is not valid percent-encoding is a 400 for its parameter', async () => {
  for (const segment of ['%FF', '%E0%A4', '%', 'a%2']) {
    const { response, body } = await checkedFetch(`${prefix()}/items/erp/${segment}`, { headers: auth() });
    assert.equal(response.status, 400, segment);
    assert.deepEqual(pathsOf(body), ['path.externalId'], segment);
  }
});

test('out-of-range values are a 400 or a 422, never a 500', async () => {
  const price = await checkedFetch(`${prefix()}/items/upsert`, { method: 'POST', headers: auth(), body: JSON.stringify(item('p', { price: 1e16, cost: 1e300 })) });
  assert.equal(price.response.status, 400);
  assert.deepEqual(pathsOf(price.body).sort(), ['cost', 'price']);
  for (const date of ['0000-01-01T00:00:00Z', '2026-01-01T00:00:00+16:00', '2026-02-30T00:00:00Z']) {
    const { response, body } = await checkedFetch(`${prefix()}/items?updatedSince=${encodeURIComponent(date)}`, { headers: auth() });
    assert.equal(response.status, 400, date);
    assert.deepEqual(pathsOf(body), ['query.updatedSince'], date);
  }
  expectData(await api.upsertItem(item('stock', { trackStock: true }), opts()), 201);
  const movement = (quantity: number) => api.createStockMovement('erp', 'stock', { quantity, reason: 'receipt' }, {}, opts());
  expectData(await movement(2_147_483_000), 201);
  const overflow = expectStatus(await movement(1000), 422);
  assert.match(overflow.error.message, /2147484000.*outside the range/);
  const { rows } = await sql.query("SELECT on_hand FROM items WHERE external_id = 'stock'");
  assert.equal(rows[0].on_hand, 2_147_483_000, 'the refused movement changed nothing');
  const late = await checkedFetch(`${prefix()}/items/erp/stock/stock-movements`, {
    method: 'POST', headers: auth(), body: JSON.stringify({ quantity: -1, reason: 'sale', occurredAt: '0000-12-31T00:00:00Z' }),
  });
  assert.equal(late.response.status, 400);
  assert.deepEqual(pathsOf(late.body), ['occurredAt']);
});

test("a 400 lists the service's rules together with the schema's complaints", async () => {
  const { response, body } = await checkedFetch(`${prefix()}/items/upsert`, {
    method: 'POST', headers: auth(), body: JSON.stringify(item('rules', { sku: '', gtin13: '4006381333932', price: 1.23456, ncm: '8471.3012' })),
  });
  assert.equal(response.status, 400);
  assert.deepEqual(pathsOf(body).sort(), ['gtin13', 'ncm', 'price', 'sku']);
});

test('in a bulk upsert an element with unstorable text fails alone', async () => {
  const data = expectData(await api.bulkUpsertItems({ items: [item('ok-1'), item('bad\u0000'), item('ok-2', { description: 'fine' })] }, opts()), 200);
  assert.deepEqual(data.results.map((r) => r.status), ['created', 'error', 'created']);
  assert.deepEqual(data.results[1]?.details?.map((d) => d.path), ['items.1.externalId']);
});

test('an upsert that fails in the database fails alone, not the group it was written with', async () => {
  // A real database failure for one identity: a trigger refuses it (the service cannot tell it apart from any other).
  await sql.query(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.external_id = 'poison' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`);
  await sql.query('CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON items FOR EACH ROW EXECUTE FUNCTION refuse_poison()');
  try {
    // Arriving together, the upserts of one catalog are written in groups; one member refused by
    // the database and one carrying a NUL must each fail alone.
    const ids = Array.from({ length: 30 }, (_, i) => (i === 7 ? 'poison' : i === 19 ? 'nul\u0000' : `group-${i}`));
    const answers = await Promise.all(ids.map((id) => api.upsertItem(item(id), opts())));
    assert.deepEqual(answers.map((a) => a.status), ids.map((id) => (id === 'poison' ? 500 : id.startsWith('nul') ? 400 : 201)));
    const { rows } = await sql.query("SELECT count(*)::int AS n FROM items WHERE external_id LIKE 'group-%'");
    assert.equal(rows[0].n, 28);
  } finally {
    await sql.query('DROP TRIGGER refuse_poison ON items; DROP FUNCTION refuse_poison()');
  }
});

test('a 32 MB bulk body of scalars is a bounded 400 while the service keeps answering', async () => {
  // Just under the bulk body limit (32 MiB): 16.7 million elements, each one wrong.
  const body = `{"items":[${'1,'.repeat(16 * 1024 * 1024 - 16)}1]}`;
  const health = (async () => {
    const answers: number[] = [];
    for (let i = 0; i < 5; i++) answers.push((await fetch(`${service.url}/healthz`)).status);
    return answers;
  })();
  const { response, body: answer } = await checkedFetch(`${prefix()}/items/bulk-upsert`, { method: 'POST', headers: auth(), body });
  assert.equal(response.status, 400);
  assert.equal(answer.error.code, 'validation_error');
  assert.ok(answer.error.details.length >= 1 && answer.error.details.length <= 100, `${answer.error.details.length} details`);
  assert.deepEqual(await health, [200, 200, 200, 200, 200]);
});

test('operational routes under the API prefix are unknown routes, not server errors', async () => {
  for (const path of ['healthz', 'readyz', 'metrics', 'docs']) {
    const { response, body } = await checkedFetch(`${prefix()}/${path}`, { headers: auth() });
    assert.equal(response.status, 404, path);
    assert.equal(body.error.code, 'not_found', path);
  }
});

test('an incoming X-Request-Id of 1 to 128 characters is kept', async () => {
  for (const id of ['a', 'abc1234', 'x'.repeat(128)]) {
    const response = await fetch(`${prefix()}/items?limit=1`, { headers: { ...auth(), 'x-request-id': id } });
    await response.arrayBuffer();
    assert.equal(response.headers.get('x-request-id'), id);
  }
  const tooLong = await fetch(`${prefix()}/items?limit=1`, { headers: { ...auth(), 'x-request-id': 'x'.repeat(129) } });
  await tooLong.arrayBuffer();
  assert.notEqual(tooLong.headers.get('x-request-id'), 'x'.repeat(129));
});
