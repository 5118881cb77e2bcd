// Item versions: who changed what, when and from what, for every write a caller makes; pages, restore, retention and purge.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { item, jsonl, runImport, startImportService } from '../helpers/imports.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let tenant: Tenant;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const opts = (headers: Record<string, string> = {}) => clientOptions(service.url, tenant.key, headers);
const versionsOf = async (externalId: string, query: { limit?: number; cursor?: string } = {}) =>
  expectData(await api.listItemVersions('erp', externalId, query, opts()), 200);

before(async () => {
  service = await startImportService(FILE);
  tenant = await service.newTenant();
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await sql?.end();
  await service?.close();
});

test('every write records a version with its changes and source; an unchanged upsert none; the list outlives a delete', async () => {
  const payload = { externalSystem: 'erp', externalId: 'V-1', name: 'Mug', price: 10, trackStock: true, brand: { name: 'Acme' } };
  expectData(await api.upsertItem(payload, opts({ 'idempotency-key': 'create-v1' })), 201);
  expectData(await api.upsertItem({ ...payload, price: 12.5, tags: ['sale'] }, opts()), 200);
  assert.equal(expectData(await api.upsertItem({ ...payload, price: 12.5, tags: ['sale'] }, opts()), 200).outcome, 'unchanged');
  expectData(await api.createStockMovement('erp', 'V-1', { quantity: 7, reason: 'receipt' }, {}, opts()), 201);
  expectData(await api.deleteItem('erp', 'V-1', opts()), 200);

  const { versions, nextCursor } = await versionsOf('V-1');
  assert.equal(nextCursor, null);
  assert.deepEqual(versions.map((v) => [v.version, v.kind]), [[4, 'deleted'], [3, 'stock'], [2, 'updated'], [1, 'created']]);
  const [deleted, stock, updated, created] = versions as [api.ItemVersion, api.ItemVersion, api.ItemVersion, api.ItemVersion];
  assert.deepEqual(updated.changes, [{ field: 'price', previous: 10, value: 12.5 }, { field: 'tags', previous: [], value: ['sale'] }]);
  assert.equal(updated.item?.price, 12.5);
  assert.deepEqual(stock.changes, [{ field: 'onHand', previous: 0, value: 7 }]);
  assert.deepEqual(created.changes, []);
  assert.equal(created.item?.brand?.name, 'Acme');
  assert.equal(deleted.item?.onHand, 7, 'a delete keeps the item as it was');
  for (const version of versions) {
    assert.equal(version.source?.kind, 'api');
    assert.equal(version.source?.apiKeyId, tenant.keyId);
    assert.match(version.source?.requestId ?? '', /\S/);
    assert.ok(version.eventId);
  }
  assert.equal(created.source?.idempotencyKey, 'create-v1');
  assert.equal(updated.source?.idempotencyKey, undefined);
  assert.notEqual(created.source?.requestId, updated.source?.requestId);
  // Each version names the event it emitted, and the event log has it.
  assert.equal(expectData(await api.getEvent(updated.eventId!, opts()), 200).type, 'item.updated');
});

test('item.updated carries previousAttributes: the changed fields as they were', async () => {
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'V-EV', name: 'Tee', category: { name: 'Shirts' }, price: 5 }, opts()), 201);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'V-EV', name: 'Tee', category: { name: 'Tops' }, price: 5 }, opts()), 200);
  const [version] = (await versionsOf('V-EV')).versions;
  const event = expectData(await api.getEvent(version!.eventId!, opts()), 200) as unknown as { data: { changedFields: string[]; previousAttributes: Record<string, unknown> } };
  assert.deepEqual(event.data.changedFields, ['category']);
  assert.equal((event.data.previousAttributes.category as { name: string }).name, 'Shirts');
  assert.deepEqual(Object.keys(event.data.previousAttributes), ['category']);
});

test('pages newest first by cursor; an identity without versions is 404; reading needs catalog:read', async () => {
  for (let n = 1; n <= 5; n += 1) expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'V-PAGES', name: `Name ${n}` }, opts()), n === 1 ? 201 : 200);
  const seen: number[] = [];
  let cursor: string | undefined;
  do {
    const page = await versionsOf('V-PAGES', { limit: 2, ...(cursor ? { cursor } : {}) });
    seen.push(...page.versions.map((v) => v.version));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  assert.deepEqual(seen, [5, 4, 3, 2, 1]);
  expectStatus(await api.listItemVersions('erp', 'NEVER', {}, opts()), 404);
  expectStatus(await api.listItemVersions('erp', 'V-PAGES', { cursor: 'nonsense' }, opts()), 400);
  const writer = await service.newTenant({ scopes: ['catalog:write'] });
  expectStatus(await api.listItemVersions('erp', 'V-PAGES', {}, clientOptions(service.url, writer.key)), 403);
});

test('restore upserts a version back, with its own version and event; a deleted item comes back', async () => {
  const payload = { externalSystem: 'erp', externalId: 'V-R', name: 'Lamp', price: 30 };
  expectData(await api.upsertItem(payload, opts()), 201);
  expectData(await api.upsertItem({ ...payload, price: 25 }, opts()), 200);
  const restored = expectData(await api.restoreItemVersion('erp', 'V-R', 1, opts()), 200);
  assert.equal(restored.outcome, 'updated');
  assert.equal(restored.item.price, 30);
  assert.equal(expectData(await api.restoreItemVersion('erp', 'V-R', 1, opts()), 200).outcome, 'unchanged');
  expectData(await api.deleteItem('erp', 'V-R', opts()), 200);
  const back = expectData(await api.restoreItemVersion('erp', 'V-R', 2, opts()), 201);
  assert.equal(back.item.price, 25);
  const { versions } = await versionsOf('V-R');
  assert.deepEqual(versions.map((v) => [v.version, v.kind, v.source?.restoredFromVersion]),
    [[5, 'created', 2], [4, 'deleted', undefined], [3, 'updated', 1], [2, 'updated', undefined], [1, 'created', undefined]]);
  assert.deepEqual(versions[2]!.changes, [{ field: 'price', previous: 25, value: 30 }]);
  expectStatus(await api.restoreItemVersion('erp', 'V-R', 99, opts()), 404);
});

test('a version older than the retention period is refused for restore, and the purge removes it', async () => {
  const payload = { externalSystem: 'erp', externalId: 'V-OLD', name: 'Old' };
  expectData(await api.upsertItem(payload, opts()), 201);
  expectData(await api.upsertItem({ ...payload, name: 'Newer' }, opts()), 200);
  await sql.query(`UPDATE item_versions SET created_at = now() - interval '91 days' WHERE external_id = 'V-OLD' AND version = 1`);
  const refused = expectStatus(await api.restoreItemVersion('erp', 'V-OLD', 1, opts()), 422);
  assert.equal(refused.error.code, 'unprocessable');
  assert.match(refused.error.message, /older than the 90-day retention period.*the oldest version that can is 2/);
  // A consumers process purges on start, as it purges the sent outbox rows, then every 10 minutes.
  const consumers = await startTestService(FILE, { DATABASE_URL: service.databaseUrl, ROLE: 'consumers' });
  try {
    const deadline = Date.now() + 60_000;
    while ((await versionsOf('V-OLD')).versions.length > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  } finally {
    await consumers.close();
  }
  assert.deepEqual((await versionsOf('V-OLD')).versions.map((v) => v.version), [2]);
  assert.match(expectStatus(await api.restoreItemVersion('erp', 'V-OLD', 1, opts()), 422).error.message, /retention/);
});

test('bulk upserts and import lines record their sources; an unchanged re-import writes no version', async () => {
  const bulk = expectData(await api.bulkUpsertItems({ items: [item('V-B1'), item('V-B2')] }, opts()), 200);
  assert.equal(bulk.summary.created, 2);
  const [b1] = (await versionsOf('V-B1')).versions;
  const [b2] = (await versionsOf('V-B2')).versions;
  assert.equal(b1!.source?.requestId, b2!.source?.requestId);
  const file = jsonl([item('V-I1'), item('V-I2', { price: 11 }), item('V-B1', { price: 99 })]);
  const job = await runImport(opts(), file);
  assert.equal(job.status, 'completed');
  const [i2] = (await versionsOf('V-I2')).versions;
  assert.deepEqual(i2!.source, { kind: 'import', importJobId: job.id, lineNumber: 2 });
  const [b1again] = (await versionsOf('V-B1')).versions;
  assert.deepEqual([b1again!.version, b1again!.source?.lineNumber, b1again!.changes], [2, 3, [{ field: 'price', previous: 10, value: 99 }]]);
  const before = Number((await sql.query('SELECT count(*) AS n FROM item_versions')).rows[0].n);
  assert.equal((await runImport(opts(), file)).counts.unchanged, 3);
  assert.equal(Number((await sql.query('SELECT count(*) AS n FROM item_versions')).rows[0].n), before);
});
