// Bulk upserts: always 200 for a well-shaped body, one result per element in order, isolation.
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
const item = (id: string, overrides: Partial<ItemPayload> = {}): ItemPayload => ({
  externalSystem: 'pim', externalId: id, sku: `SKU-${id}`, name: `Item ${id}`, price: 10, category: { name: 'Bulk' }, ...overrides,
});

before(async () => {
  service = await startTestService(FILE);
  tenant = await service.newTenant();
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await sql?.end();
  await service?.close();
});

test('results come in request order with a summary; failing elements do not affect the others', async () => {
  expectData(await api.upsertItem(item('EXISTING', { sku: 'TAKEN' }), opts()), 201);
  const body = {
    items: [
      item('B-1'),
      item('B-2', { gtin13: '123' }),
      item('B-3', { sku: 'TAKEN' }),
      { externalSystem: 'pim', externalId: 'B-4', name: 'x', colour: 'blue' } as unknown as ItemPayload,
      item('B-5'),
      item('EXISTING', { sku: 'TAKEN' }),
    ],
  };
  const data = expectData(await api.bulkUpsertItems(body, opts()), 200);
  assert.deepEqual(data.results.map((r) => [r.index, r.externalId, r.status]), [
    [0, 'B-1', 'created'], [1, 'B-2', 'error'], [2, 'B-3', 'error'], [3, 'B-4', 'error'], [4, 'B-5', 'created'], [5, 'EXISTING', 'unchanged'],
  ]);
  assert.deepEqual(data.summary, { created: 2, updated: 0, unchanged: 1, failed: 3 });
  assert.equal(data.results[1]?.errorCode, 'validation_error');
  assert.deepEqual(data.results[1]?.details?.map((d) => d.path), ['items.1.gtin13']);
  assert.match(data.results[1]?.error ?? '', /items\.1\.gtin13/);
  assert.equal(data.results[2]?.errorCode, 'conflict');
  assert.deepEqual(data.results[2]?.details?.map((d) => d.path), ['items.2.sku']);
  assert.deepEqual(data.results[3]?.details?.map((d) => d.path), ['items.3.colour']);
  assert.ok(data.results[0]?.serviceId && data.results[0].contentHash);
  const { rows } = await sql.query("SELECT external_id FROM items WHERE external_id LIKE 'B-%' ORDER BY 1");
  assert.deepEqual(rows.map((r) => r.external_id), ['B-1', 'B-5']);
});

test('the same identity twice in one body is applied in order', async () => {
  const data = expectData(await api.bulkUpsertItems({
    items: [item('TWICE', { price: 1 }), item('TWICE', { price: 2 }), item('TWICE', { price: 2 })],
  }, opts()), 200);
  assert.deepEqual(data.results.map((r) => r.status), ['created', 'updated', 'unchanged']);
  const stored = expectData(await api.getItem('pim', 'TWICE', opts()), 200);
  assert.equal(stored.price, 2);
});

test('two elements claiming one new SKU: the first wins, the second is a conflict', async () => {
  const data = expectData(await api.bulkUpsertItems({ items: [item('SKU-X1', { sku: 'NEW-SKU' }), item('SKU-X2', { sku: 'NEW-SKU' })] }, opts()), 200);
  assert.deepEqual(data.results.map((r) => [r.status, r.errorCode]), [['created', undefined], ['error', 'conflict']]);
});

test('1000 items in one body are accepted; resending them is all unchanged', async () => {
  const items = Array.from({ length: 1000 }, (_, i) => item(`K-${i}`, { tags: [`t${i % 7}`], category: { name: `Cat ${i % 5}` } }));
  const first = expectData(await api.bulkUpsertItems({ items }, opts()), 200);
  assert.deepEqual(first.summary, { created: 1000, updated: 0, unchanged: 0, failed: 0 });
  const again = expectData(await api.bulkUpsertItems({ items }, opts()), 200);
  assert.deepEqual(again.summary, { created: 0, updated: 0, unchanged: 1000, failed: 0 });
  assert.equal((await sql.query("SELECT count(*) AS n FROM categories WHERE name_key LIKE 'cat %'")).rows[0].n, '5');
});

test('a body of the wrong shape is a 400 for the whole request', async () => {
  const tooMany = { items: Array.from({ length: 1001 }, (_, i) => item(`M-${i}`)) };
  const error = expectStatus(await api.bulkUpsertItems(tooMany, opts()), 400);
  assert.equal(error.error.details?.[0]?.path, 'items');
  expectStatus(await api.bulkUpsertItems({ items: [] }, opts()), 400);
  for (const body of ['[]', '{"items": "nope"}', '{"items": [1, "two"]}', '{}']) {
    const { response, body: answer } = await checkedFetch(`${service.url}/api/v1/catalog/items/bulk-upsert`, {
      method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' }, body,
    });
    assert.equal(response.status, 400, body);
    assert.equal(answer.error.code, 'validation_error');
  }
});
