// Reading and deleting items: one, pages with filters, the JSONL export, and tenant isolation.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { ItemPayload } from '../../generated/client.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let alice: Tenant;
let bob: Tenant;
const as = (tenant: Tenant) => clientOptions(service.url, tenant.key);

const payload = (id: string, overrides: Partial<ItemPayload> = {}): ItemPayload => ({
  externalSystem: 'erp', externalId: id, sku: `S-${id}`, name: `Item ${id}`, price: 5, category: { name: 'Toys' },
  brand: { name: 'Brio' }, tags: ['wood'], ...overrides,
});

before(async () => {
  service = await startTestService(FILE);
  alice = await service.newTenant();
  bob = await service.newTenant();
});
after(async () => {
  await service?.close();
});

test('GET one item; a missing one is 404', async () => {
  expectData(await api.upsertItem(payload('R-1'), as(alice)), 201);
  const item = expectData(await api.getItem('erp', 'R-1', as(alice)), 200);
  assert.equal(item.name, 'Item R-1');
  assert.equal(expectStatus(await api.getItem('erp', 'NOPE', as(alice)), 404).error.code, 'not_found');
});

test('identifiers with slashes and spaces round-trip through the path', async () => {
  expectData(await api.upsertItem(payload('A/B C?#1', { sku: 'SLASH' }), as(alice)), 201);
  assert.equal(expectData(await api.getItem('erp', 'A/B C?#1', as(alice)), 200).externalId, 'A/B C?#1');
});

test('pages follow the cursor without gaps or repeats; filters narrow them', async () => {
  const shop = await service.newTenant();
  const items = Array.from({ length: 25 }, (_, i) => payload(`P-${String(i).padStart(2, '0')}`, {
    category: { name: i % 2 === 0 ? 'Even' : 'Odd' }, brand: { name: i < 5 ? 'Lego' : 'Brio' }, tags: i % 3 === 0 ? ['three'] : ['other'],
  }));
  expectData(await api.bulkUpsertItems({ items }, as(shop)), 200);
  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const page = expectData(await api.listItems({ limit: 10, cursor }, as(shop)), 200);
    assert.ok(page.items.length <= 10);
    seen.push(...page.items.map((i) => i.externalId));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  assert.equal(seen.length, 25);
  assert.equal(new Set(seen).size, 25);

  const even = expectData(await api.listItems({ category: 'even', limit: 100 }, as(shop)), 200);
  assert.equal(even.items.length, 13);
  const lego = expectData(await api.listItems({ brand: 'LEGO', limit: 100 }, as(shop)), 200);
  assert.equal(lego.items.length, 5);
  const three = expectData(await api.listItems({ tag: 'three', limit: 100 }, as(shop)), 200);
  assert.equal(three.items.length, 9);
  const bySku = expectData(await api.listItems({ sku: 'S-P-07' }, as(shop)), 200);
  assert.deepEqual(bySku.items.map((i) => i.externalId), ['P-07']);
  const future = expectData(await api.listItems({ updatedSince: new Date(Date.now() + 60_000).toISOString() }, as(shop)), 200);
  assert.deepEqual(future.items, []);
  assert.equal(expectStatus(await api.listItems({ cursor: 'garbage' }, as(shop)), 400).error.details?.[0]?.path, 'query.cursor');
  assert.equal(expectStatus(await api.listItems({ limit: 500 }, as(shop)), 400).error.code, 'validation_error');
});

test('DELETE removes the item and answers its identity; a second DELETE is 404', async () => {
  const created = expectData(await api.upsertItem(payload('D-1'), as(alice)), 201);
  const deleted = expectData(await api.deleteItem('erp', 'D-1', as(alice)), 200);
  assert.deepEqual(deleted, { deleted: true, externalSystem: 'erp', externalId: 'D-1', serviceId: created.serviceId });
  expectStatus(await api.getItem('erp', 'D-1', as(alice)), 404);
  expectStatus(await api.deleteItem('erp', 'D-1', as(alice)), 404);
});

test('a key of another catalog never sees, changes or deletes the item: 404 on every item route', async () => {
  expectData(await api.upsertItem(payload('SECRET', { trackStock: true }), as(alice)), 201);
  expectStatus(await api.getItem('erp', 'SECRET', as(bob)), 404);
  expectStatus(await api.deleteItem('erp', 'SECRET', as(bob)), 404);
  expectStatus(await api.createStockMovement('erp', 'SECRET', { quantity: 1, reason: 'receipt' }, {}, as(bob)), 404);
  expectStatus(await api.listStockMovements('erp', 'SECRET', {}, as(bob)), 404);
  const bobsList = expectData(await api.listItems({ limit: 200 }, as(bob)), 200);
  assert.ok(!bobsList.items.some((i) => i.externalId === 'SECRET'));
  const bobsExport = await api.exportItems({}, as(bob));
  assert.ok(!bobsExport.data!.includes('SECRET'));
  // Bob's upsert of the same identity creates Bob's own item; Alice's stays as it was.
  expectData(await api.upsertItem(payload('SECRET', { name: 'Bob version', sku: 'BOB' }), as(bob)), 201);
  assert.equal(expectData(await api.getItem('erp', 'SECRET', as(alice)), 200).name, 'Item SECRET');
  const bobBulk = expectData(await api.bulkUpsertItems({ items: [payload('SECRET', { name: 'Bob again', sku: 'BOB' })] }, as(bob)), 200);
  assert.equal(bobBulk.results[0]?.status, 'updated');
  assert.equal(expectData(await api.getItem('erp', 'SECRET', as(alice)), 200).name, 'Item SECRET');
});

test('the export is JSONL in the payload shape; importing it elsewhere yields identical hashes', async () => {
  const source = await service.newTenant();
  const target = await service.newTenant();
  const items = [
    payload('E-1', { description: ' Café ', metadata: { a: { b: [1, 2] } }, media: [
      { url: 'https://cdn.example.com/x.jpg?b=2&a=1&utm_medium=feed', role: 'primary', sortOrder: 0 },
      { url: 'https://cdn.example.com/y.jpg', role: 'gallery', sortOrder: 1 }], gtin13: '4006381333931', ncm: '6912.00.00', weight: 1.5, cost: 0.1234 }),
    payload('E-2', { category: { name: 'TOYS' }, tags: ['b', 'a'], trackStock: true }),
    payload('E-3', { sku: null, category: null, brand: null, tags: [] }),
  ];
  const stored = expectData(await api.bulkUpsertItems({ items }, as(source)), 200);
  const exported = await api.exportItems({}, as(source));
  assert.equal(exported.status, 200);
  const lines = exported.data!.trimEnd().split('\n');
  assert.equal(lines.length, 3);
  const parsed = lines.map((line) => JSON.parse(line) as ItemPayload);
  assert.deepEqual(parsed.map((p) => p.externalId), ['E-1', 'E-2', 'E-3']);
  assert.ok(parsed.every((p) => !('serviceId' in p) && !('contentHash' in p)), 'payload shape only');
  const reimported = expectData(await api.bulkUpsertItems({ items: parsed }, as(target)), 200);
  assert.deepEqual(reimported.results.map((r) => r.contentHash), stored.results.map((r) => r.contentHash));
  const again = expectData(await api.bulkUpsertItems({ items: parsed }, as(source)), 200);
  assert.deepEqual(again.summary, { created: 0, updated: 0, unchanged: 3, failed: 0 });
});

test('the export of a large catalog is streamed, not buffered', async () => {
  const big = await service.newTenant();
  for (let batch = 0; batch < 5; batch += 1) {
    const items = Array.from({ length: 1000 }, (_, i) => payload(`X-${batch}-${i}`, { metadata: { blob: 'x'.repeat(1000) } }));
    expectData(await api.bulkUpsertItems({ items }, as(big)), 200);
  }
  {
    const response = await fetch(`${service.url}/api/v1/catalog/items/export`, { headers: { authorization: `Bearer ${big.key}` } });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/x-ndjson/);
    assert.equal(response.headers.get('content-length'), null, 'streamed, not buffered');
    let lines = 0;
    let tail = '';
    const decoder = new TextDecoder();
    for await (const chunk of response.body!) {
      const text = tail + decoder.decode(chunk, { stream: true });
      const parts = text.split('\n');
      tail = parts.pop()!;
      lines += parts.length;
    }
    assert.equal(lines, 5000);
  }
});
