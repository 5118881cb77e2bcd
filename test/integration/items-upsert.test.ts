// Single upserts: outcomes by content hash, zero writes when unchanged, validation, SKU conflicts, names.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { ItemPayload } from '../../generated/client.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let tenant: Tenant;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const opts = () => clientOptions(service.url, tenant.key);

const mug = (overrides: Partial<ItemPayload> = {}): ItemPayload => ({
  externalSystem: 'erp',
  externalId: 'MUG-001',
  sku: 'MUG-RED',
  name: 'Red mug',
  description: 'Stoneware, 350 ml',
  price: 12.5,
  cost: 4.1234,
  weight: 0.35,
  gtin13: '4006381333931',
  ncm: '6912.00.00',
  category: { name: 'Kitchen' },
  brand: { name: 'Acme' },
  tags: ['red', 'stoneware'],
  metadata: { colour: 'red', capacityMl: 350 },
  media: [{ url: 'https://cdn.merchant.example/mug-red.jpg', role: 'primary', sortOrder: 0 }],
  trackStock: true,
  ...overrides,
});

before(async () => {
  // The API alone: no media consumer changes the assets' states while answers are compared to reads.
  service = await startTestService(FILE, { ROLE: 'api' });
  tenant = await service.newTenant();
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await sql?.end();
  await service?.close();
});

test('created (201), then unchanged, then updated (200), with the stored item', async () => {
  const created = await api.upsertItem(mug(), opts());
  const first = expectData(created, 201);
  assert.equal(first.outcome, 'created');
  assert.match(first.serviceId, /^[0-9a-f]{8}-[0-9a-f]{4}-7/);
  assert.equal(first.item.serviceId, first.serviceId);
  assert.equal(first.item.name, 'Red mug');
  assert.equal(first.item.ncm, '69120000', 'ncm dots are stripped');
  assert.deepEqual(first.item.category?.name, 'Kitchen');
  assert.equal(first.item.media[0]?.status, 'pending', 'images arrive later; the item is readable at once');

  const again = expectData(await api.upsertItem(mug(), opts()), 200);
  assert.equal(again.outcome, 'unchanged');
  assert.equal(again.serviceId, first.serviceId);
  assert.equal(again.contentHash, first.contentHash);

  const changed = expectData(await api.upsertItem(mug({ price: 13 }), opts()), 200);
  assert.equal(changed.outcome, 'updated');
  assert.equal(changed.serviceId, first.serviceId);
  assert.notEqual(changed.contentHash, first.contentHash);
  assert.equal(changed.item.price, 13);

  // Each answer's item is the stored one, exactly as a read returns it at that moment.
  const read = async () => expectData(await api.getItem('erp', 'MUG-001', opts()), 200);
  assert.deepEqual(changed.item, await read());
  assert.deepEqual(expectData(await api.upsertItem(mug({ price: 13 }), opts()), 200).item, await read());
});

test('the answer carries the stored item whatever the outcome: names as first spelled, media states, stock', async () => {
  const first = mug({ externalId: 'MUG-ANSWER', sku: 'MUG-ANSWER', category: { name: 'Answer Shelf' }, brand: { name: 'Answer Co' } });
  const created = expectData(await api.upsertItem(first, opts()), 201);
  const read = async () => expectData(await api.getItem('erp', 'MUG-ANSWER', opts()), 200);
  assert.deepEqual(created.item, await read(), 'created: names made in the same statement');
  await sql.query(`UPDATE media_assets SET status = 'ingested', content_type = 'image/jpeg', width = 10, height = 20, byte_size = 300
    WHERE catalog_id = $1`, [tenant.catalogId]);
  await sql.query('UPDATE items SET on_hand = 7 WHERE catalog_id = $1 AND external_id = $2', [tenant.catalogId, 'MUG-ANSWER']);
  const spelled = { ...first, category: { name: 'ANSWER SHELF' }, brand: { name: 'answer co' } };
  const unchanged = expectData(await api.upsertItem(spelled, opts()), 200);
  assert.equal(unchanged.outcome, 'unchanged', 'names match case-insensitively and hash case-folded');
  assert.deepEqual(unchanged.item, await read());
  assert.equal(unchanged.item.media[0]?.status, 'ingested');
  assert.equal(unchanged.item.onHand, 7);
  const updated = expectData(await api.upsertItem({ ...spelled, name: 'Answer mug' }, opts()), 200);
  assert.equal(updated.outcome, 'updated');
  assert.deepEqual(updated.item, await read(), 'updated: stored names and asset states, not the payload\'s');
  assert.equal(updated.item.category?.name, 'Answer Shelf');
});

test('unchanged performs zero writes: xmin, xmax (not even locked) and updated_at stay, no outbox row', async () => {
  const payload = mug({ externalId: 'ZERO-1', sku: 'ZERO-1' });
  expectData(await api.upsertItem(payload, opts()), 201);
  const before = (await sql.query("SELECT xmin::text AS xmin, xmax::text AS xmax, updated_at FROM items WHERE external_id = 'ZERO-1'")).rows[0];
  // Only this item's rows: the media consumer may add events of its own for other items meanwhile.
  const outboxRows = async () => Number((await sql.query("SELECT count(*) AS n FROM outbox_events WHERE payload::jsonb ->> 'resourceId' = 'ZERO-1'")).rows[0].n);
  const outboxBefore = await outboxRows();
  const categoriesBefore = (await sql.query('SELECT xmin::text AS xmin, xmax::text AS xmax FROM categories ORDER BY id')).rows;
  // Whitespace, key order, tag order and tracking parameters do not change the content.
  const reordered: ItemPayload = {
    trackStock: true, media: [{ url: 'https://CDN.merchant.example:443/mug-red.jpg?utm_source=feed#top', role: 'primary', sortOrder: 0 }],
    metadata: { capacityMl: 350, colour: 'red' }, tags: ['stoneware', 'red', 'red'], brand: { name: ' Acme ' },
    category: { name: 'Kitchen' }, ncm: '69120000', gtin13: '4006381333931', weight: 0.35, cost: 4.1234, price: 12.50,
    description: 'Stoneware, 350 ml ', name: '  Red mug', sku: 'ZERO-1', externalId: 'ZERO-1', externalSystem: 'erp',
  };
  for (let i = 0; i < 3; i += 1) {
    assert.equal(expectData(await api.upsertItem(reordered, opts()), 200).outcome, 'unchanged');
  }
  const afterRow = (await sql.query("SELECT xmin::text AS xmin, xmax::text AS xmax, updated_at FROM items WHERE external_id = 'ZERO-1'")).rows[0];
  assert.deepEqual(afterRow, before, 'the row was not rewritten');
  assert.equal(await outboxRows(), outboxBefore, 'no event');
  assert.deepEqual((await sql.query('SELECT xmin::text AS xmin, xmax::text AS xmax FROM categories ORDER BY id')).rows, categoriesBefore);
});

test('an omitted optional field is cleared (full replacement)', async () => {
  expectData(await api.upsertItem(mug({ externalId: 'CLEAR-1', sku: 'CLEAR-1' }), opts()), 201);
  const cleared = expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'CLEAR-1', name: 'Red mug' }, opts()), 200);
  assert.equal(cleared.outcome, 'updated');
  assert.equal(cleared.item.sku, null);
  assert.equal(cleared.item.price, null);
  assert.equal(cleared.item.category, null);
  assert.deepEqual(cleared.item.tags, []);
  assert.deepEqual(cleared.item.media, []);
  assert.equal(cleared.item.trackStock, false);
  // Stored as SQL NULL (not a JSON null), empty arrays where the column has a default.
  const { rows: [row] } = await sql.query(`SELECT sku IS NULL AS sku, price IS NULL AS price, category_id IS NULL AS category,
    metadata IS NULL AS metadata, tags, media FROM items WHERE external_id = 'CLEAR-1'`);
  assert.deepEqual(row, { sku: true, price: true, category: true, metadata: true, tags: [], media: [] });
});

test('validation errors list each field path; nothing is written', async () => {
  const bad = mug({ externalId: 'BAD-1', sku: 'S'.repeat(101), gtin13: '4006381333932', price: 1.23456, media: [
    { url: 'https://a.example/1.jpg', role: 'primary', sortOrder: 0 }, { url: 'https://a.example/2.jpg', role: 'primary', sortOrder: 1 },
  ] });
  const answer = await api.upsertItem(bad, opts());
  const error = expectStatus(answer, 400);
  assert.equal(error.error.code, 'validation_error');
  const paths = (error.error.details ?? []).map((d) => d.path);
  assert.ok(paths.includes('sku'), `sku in ${paths}`);
  const second = await api.upsertItem(mug({ externalId: 'BAD-1', gtin13: '4006381333932', price: 1.23456 }), opts());
  const details = expectStatus(second, 400).error.details ?? [];
  assert.deepEqual(details.map((d) => d.path).sort(), ['gtin13', 'price']);
  assert.equal((await sql.query("SELECT count(*) AS n FROM items WHERE external_id = 'BAD-1'")).rows[0].n, '0');
  const noName = await api.upsertItem({ externalSystem: 'erp', externalId: 'BAD-2' } as ItemPayload, opts());
  assert.deepEqual((expectStatus(noName, 400).error.details ?? []).map((d) => d.path), ['name']);
  const badSystem = await api.upsertItem({ externalSystem: 'e r p', externalId: 'BAD-3', name: 'x' }, opts());
  assert.deepEqual((expectStatus(badSystem, 400).error.details ?? []).map((d) => d.path), ['externalSystem']);
});

test('a SKU used by another item is a 409 conflict and changes nothing', async () => {
  expectData(await api.upsertItem(mug({ externalId: 'SKU-A', sku: 'SHARED-SKU' }), opts()), 201);
  const clash = await api.upsertItem(mug({ externalId: 'SKU-B', sku: 'SHARED-SKU' }), opts());
  const error = expectStatus(clash, 409);
  assert.equal(error.error.code, 'conflict');
  assert.equal(error.error.details?.[0]?.path, 'sku');
  // The message names the holder, so the caller knows which of the two items to change.
  assert.equal(error.error.message, 'SKU "SHARED-SKU" is already used by the item with externalSystem "erp" and externalId "SKU-A".');
  assert.equal((await sql.query("SELECT count(*) AS n FROM items WHERE external_id = 'SKU-B'")).rows[0].n, '0');
  // SKUs are per catalog: another catalog may use the same one.
  const other = await service.newTenant();
  expectData(await api.upsertItem(mug({ externalId: 'SKU-B', sku: 'SHARED-SKU' }), clientOptions(service.url, other.key)), 201);
});

test('categories and brands are created on first use and matched case-insensitively', async () => {
  const first = expectData(await api.upsertItem(mug({ externalId: 'CAT-1', sku: 'CAT-1', category: { name: 'Garden Tools' } }), opts()), 201);
  const second = expectData(await api.upsertItem(mug({ externalId: 'CAT-2', sku: 'CAT-2', category: { name: '  garden TOOLS ' } }), opts()), 201);
  assert.equal(second.item.category?.id, first.item.category?.id);
  assert.equal(second.item.category?.name, 'Garden Tools', 'the first spelling names the category');
  const { rows } = await sql.query("SELECT count(*) AS n FROM categories WHERE name_key = 'garden tools'");
  assert.equal(rows[0].n, '1');
});

test('20 concurrent upserts naming the same new category and brand create exactly one of each', async () => {
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
    api.upsertItem(mug({ externalId: `RACE-${i}`, sku: `RACE-${i}`, category: { name: 'Race Category' }, brand: { name: 'Race Brand' } }), opts())));
  const ids = new Set(answers.map((a) => expectData(a, 201).item.category?.id));
  assert.equal(ids.size, 1);
  assert.equal((await sql.query("SELECT count(*) AS n FROM categories WHERE name_key = 'race category'")).rows[0].n, '1');
  assert.equal((await sql.query("SELECT count(*) AS n FROM brands WHERE name_key = 'race brand'")).rows[0].n, '1');
});

test('the same new item sent concurrently is created once; the others see it', async () => {
  const answers = await Promise.all(Array.from({ length: 10 }, () => api.upsertItem(mug({ externalId: 'SAME-1', sku: 'SAME-1' }), opts())));
  const outcomes = answers.map((a) => (a.status === 201 || a.status === 200 ? a.data.data.outcome : `HTTP ${a.status}`));
  assert.equal(outcomes.filter((o) => o === 'created').length, 1, outcomes.join(','));
  assert.ok(outcomes.every((o) => o === 'created' || o === 'unchanged'), outcomes.join(','));
  assert.equal((await sql.query("SELECT count(*) AS n FROM items WHERE external_id = 'SAME-1'")).rows[0].n, '1');
});

test('concurrent upserts share statements, yet each gets the answer it would get alone', async () => {
  const item = (id: string, overrides: Partial<ItemPayload> = {}) =>
    mug({ externalId: id, sku: id, media: [], category: { name: 'Grouped' }, ...overrides });
  for (let i = 0; i < 10; i += 1) expectData(await api.upsertItem(item(`GROUP-${i}`), opts()), 201);
  const other = await service.newTenant();
  const requests = [
    ...Array.from({ length: 10 }, (_, i) => api.upsertItem(item(`GROUP-NEW-${i}`), opts())),
    ...Array.from({ length: 5 }, (_, i) => api.upsertItem(item(`GROUP-${i}`), opts())),
    ...Array.from({ length: 5 }, (_, i) => api.upsertItem(item(`GROUP-${i + 5}`, { price: 99 }), opts())),
    api.upsertItem(item('GROUP-BAD', { gtin13: '4006381333932' }), opts()),
    api.upsertItem(item('GROUP-CLAIM-A', { sku: 'GROUP-CLAIMED' }), opts()),
    api.upsertItem(item('GROUP-CLAIM-B', { sku: 'GROUP-CLAIMED' }), opts()),
    api.upsertItem(item('GROUP-NEW-0'), clientOptions(service.url, other.key)),
  ];
  const answers = await Promise.all(requests);
  const outcome = (i: number) => {
    const answer = answers[i]!;
    return answer.status === 200 || answer.status === 201 ? `${answer.status} ${answer.data.data.outcome}` : `${answer.status} ${answer.data.error.code}`;
  };
  assert.deepEqual(answers.slice(0, 20).map((_, i) => outcome(i)), [
    ...Array<string>(10).fill('201 created'), ...Array<string>(5).fill('200 unchanged'), ...Array<string>(5).fill('200 updated'),
  ]);
  assert.equal(outcome(20), '400 validation_error');
  assert.deepEqual(expectStatus(answers[20]!, 400).error.details?.map((d) => d.path), ['gtin13']);
  assert.deepEqual([outcome(21), outcome(22)].sort(), ['201 created', '409 conflict']);
  assert.equal(outcome(23), '201 created', 'another catalog has its own identities');

  // Every answer carries its own item, as a read returns it now.
  for (const [i, answer] of answers.slice(0, 20).entries()) {
    const data = expectData(answer, i < 10 ? 201 : 200);
    const externalId = i < 10 ? `GROUP-NEW-${i}` : `GROUP-${i - 10}`;
    assert.equal(data.item.externalId, externalId);
    assert.deepEqual(data.item, expectData(await api.getItem('erp', externalId, opts()), 200));
  }
  const rows = async (pattern: string) => (await sql.query(
    'SELECT external_id, xmin::text AS xmin FROM items WHERE catalog_id = $1 AND external_id LIKE $2', [tenant.catalogId, pattern])).rows;
  assert.equal((await rows('GROUP-BAD')).length, 0, 'the invalid item is not stored');
  assert.equal((await rows('GROUP-CLAIM-%')).length, 1, 'one item holds the SKU');
  // Items created by one statement carry the same transaction id: the requests were grouped.
  const created = await rows('GROUP-NEW-%');
  assert.equal(created.length, 10);
  assert.ok(new Set(created.map((r) => r.xmin)).size < 10, `transactions: ${created.map((r) => r.xmin).join(',')}`);
  // One event per write, none for the unchanged.
  const events = (await sql.query(`SELECT payload::jsonb ->> 'resourceId' AS resource, payload::jsonb ->> 'type' AS type FROM outbox_events
    WHERE payload::jsonb ->> 'resourceId' LIKE 'GROUP-%' AND payload::jsonb ->> 'catalogId' = $1 ORDER BY batch_id, ord`, [tenant.catalogId])).rows;
  const typesOf = (externalId: string) => events.filter((e) => e.resource === externalId).map((e) => e.type);
  for (let i = 0; i < 10; i += 1) {
    assert.deepEqual(typesOf(`GROUP-NEW-${i}`), ['item.created']);
    assert.deepEqual(typesOf(`GROUP-${i}`), i < 5 ? ['item.created'] : ['item.created', 'item.updated'], `GROUP-${i}`);
  }
});

test('groups keep their answers once the connections plan the group lookup once (past five runs each)', async () => {
  // Postgres plans a prepared statement afresh for its first five runs on a connection, then
  // may keep one generic plan (store-lookup.ts): 60 groups spread over the api's connections.
  const item = (id: string, overrides: Partial<ItemPayload> = {}) =>
    mug({ externalId: id, sku: `${id}-SKU`, media: [], category: { name: 'Waves' }, ...overrides });
  const row = async (id: string) => (await sql.query(
    'SELECT xmin::text AS xmin, xmax::text AS xmax FROM items WHERE catalog_id = $1 AND external_id = $2', [tenant.catalogId, id])).rows[0];
  for (let wave = 0; wave < 60; wave += 1) {
    for (const id of [`WAVE-${wave}-SAME`, `WAVE-${wave}-OLD`]) expectData(await api.upsertItem(item(id), opts()), 201);
    const stored = await row(`WAVE-${wave}-SAME`);
    const answers = await Promise.all([
      api.upsertItem(item(`WAVE-${wave}-NEW`), opts()),
      api.upsertItem(item(`WAVE-${wave}-OLD`, { price: wave + 100 }), opts()),
      api.upsertItem(item(`WAVE-${wave}-THIEF`, { sku: `WAVE-${wave}-OLD-SKU` }), opts()),
      api.upsertItem(item(`WAVE-${wave}-SAME`), opts()),
    ]);
    assert.deepEqual(answers.map((a) => (a.status === 200 || a.status === 201 ? `${a.status} ${a.data.data.outcome}` : `${a.status} ${a.data.error.code}`)),
      ['201 created', '200 updated', '409 conflict', '200 unchanged'], `wave ${wave}`);
    assert.equal(expectData(answers[1]!, 200).item.price, wave + 100);
    // Found by the group's lookup, the unchanged item is never written nor even locked.
    assert.deepEqual(await row(`WAVE-${wave}-SAME`), stored, `wave ${wave}`);
    assert.equal(stored.xmax, '0');
  }
});
