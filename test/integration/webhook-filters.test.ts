// Webhook filters end to end: a filtered subscription gets exactly the events it asks for over real HTTP, and none of the others creates a delivery; invalid filters are 400s.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { WebhookFilter } from '../../generated/client.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
let service: TestService;
let receiver: Receiver;
let tenant: Tenant;
const opts = () => clientOptions(service.url, tenant.key);

before(async () => {
  receiver = await startReceiver();
  service = await startTestService(FILE, { WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_PRIVATE: 'true' });
  tenant = await service.newTenant();
});
after(async () => {
  await service?.close();
  await receiver?.close();
});

async function subscribe(path: string, filter?: WebhookFilter) {
  const created = expectData(await api.createWebhook({ url: receiver.url(path), events: ['*'], ...(filter ? { filter } : {}) }, {}, opts()), 201);
  receiver.secrets(path, [created.secret]);
  return created;
}

test('"price or cost changed for brand Acme" receives exactly those updates; every other event creates no delivery', async () => {
  const filter: WebhookFilter = { all: [
    { field: 'type', equals: 'item.updated' },
    { field: 'changedFields', in: ['price', 'cost'] },
    { field: 'data.brand.name', equals: 'Acme' },
  ] };
  const filtered = await subscribe('/price-acme', filter);
  assert.deepEqual(filtered.filter, filter);
  await subscribe('/everything');
  const acme = { externalSystem: 'erp', externalId: 'F-1', name: 'Kettle', price: 40, brand: { name: 'Acme' }, trackStock: true };
  const other = { externalSystem: 'erp', externalId: 'F-2', name: 'Toaster', price: 30, brand: { name: 'Other' } };
  expectData(await api.upsertItem(acme, opts()), 201);
  expectData(await api.upsertItem(other, opts()), 201);
  expectData(await api.upsertItem({ ...acme, name: 'Kettle 2' }, opts()), 200);
  expectData(await api.upsertItem({ ...other, price: 25 }, opts()), 200);
  expectData(await api.createStockMovement('erp', 'F-1', { quantity: 3, reason: 'receipt' }, {}, opts()), 201);
  expectData(await api.upsertItem({ ...acme, name: 'Kettle 2', price: 35 }, opts()), 200);
  // The control webhook sees all six; both webhooks' deliveries of an event are created together.
  await receiver.waitFor('six events on /everything', (r) => r.filter((x) => x.path === '/everything').length >= 6);
  await receiver.waitFor('the price change on /price-acme', (r) => r.some((x) => x.path === '/price-acme'));
  const [got] = receiver.receipts('/price-acme');
  assert.equal(got!.event.type, 'item.updated');
  assert.equal(got!.event.data.price, 35);
  assert.deepEqual(got!.event.data.previousAttributes, { price: 40 });
  const deliveries = expectData(await api.listWebhookDeliveries(filtered.id, {}, opts()), 200);
  assert.equal(deliveries.deliveries.length, 1, 'the events the filter refuses created no delivery');
  assert.equal(receiver.receipts('/price-acme').length, 1);
});

test('or, not, existence and membership over data values; a PATCH changes or removes the filter', async () => {
  const hook = await subscribe('/sale', { any: [
    { field: 'data.tags', equals: 'sale' },
    { all: [{ field: 'data.previousAttributes.price', exists: true }, { not: { field: 'data.sku', in: ['IGNORED', null] } }] },
  ] });
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'S-1', name: 'A', tags: ['sale'] }, opts()), 201);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'S-2', name: 'B', sku: 'IGNORED', price: 1 }, opts()), 201);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'S-2', name: 'B', sku: 'IGNORED', price: 2 }, opts()), 200);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'S-3', name: 'C', sku: 'KEPT', price: 1 }, opts()), 201);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'S-3', name: 'C', sku: 'KEPT', price: 2 }, opts()), 200);
  const got = await receiver.waitFor('two events on /sale', (r) => r.filter((x) => x.path === '/sale').length >= 2);
  await receiver.waitFor('the last write everywhere', (r) => r.some((x) => x.path === '/everything' && x.event.resourceId === 'S-3' && x.event.type === 'item.updated'));
  assert.deepEqual(got.filter((x) => x.path === '/sale').map((x) => [x.event.type, x.event.resourceId]).sort(),
    [['item.created', 'S-1'], ['item.updated', 'S-3']]);
  assert.equal(expectData(await api.listWebhookDeliveries(hook.id, {}, opts()), 200).deliveries.length, 2);
  const cleared = expectData(await api.updateWebhook(hook.id, { filter: null }, opts()), 200);
  assert.equal(cleared.filter, null);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'S-4', name: 'D' }, opts()), 201);
  await receiver.waitFor('an unfiltered event on /sale', (r) => r.some((x) => x.path === '/sale' && x.event.resourceId === 'S-4'));
});

test('an invalid filter is a 400 naming the problem and where it is', async () => {
  const refused = async (filter: unknown) => {
    const answer = expectStatus(await api.createWebhook({ url: receiver.url('/bad'), events: ['*'], filter: filter as WebhookFilter }, {}, opts()), 400);
    assert.equal(answer.error.code, 'validation_error');
    return answer.error;
  };
  const unknownField = await refused({ all: [{ field: 'type', equals: 'item.updated' }, { field: 'price', equals: 1 }] });
  assert.equal(unknownField.details?.[0]?.path, 'filter.all.1.field');
  assert.match(unknownField.message, /filter\.all\.1\.field must be "type", "resourceId", "changedFields", "data"/);
  assert.match((await refused({ field: 'type', equals: 'item.updated', exists: true })).message, /takes one of "equals", "exists", not several/);
  assert.match((await refused({ all: [], field: 'type' })).message, /takes "all" alone/);
  assert.match((await refused({ any: [] })).message, /filter\.any needs at least one condition/);
  assert.match((await refused({ field: 'type' })).message, /needs one of "equals", "in", "exists"/);
  const deep = { not: { not: { not: { not: { not: { field: 'type', equals: 'x' } } } } } };
  assert.match((await refused(deep)).message, /nests deeper than 5 levels/);
  await refused({ field: 'data.name', in: ['ok', 'nul \u0000', 'lone \ud800'] });
  const unknownKey = await refused({ all: [{ field: 'type', equals: 'item.created', regex: 'x' }] });
  assert.deepEqual(unknownKey.details?.map((d) => d.path), ['filter.all.0']);
  assert.match(unknownKey.message, /filter\.all\.0 has no "regex": a condition takes "field"/);
  const hook = await subscribe('/patched');
  assert.equal(expectStatus(await api.updateWebhook(hook.id, { filter: { field: 'data.a..b', exists: true } }, opts()), 400).error.details?.[0]?.path, 'filter.field');
});
