// Item and stock events travel through the outbox to the real Kafka topic in the spec's envelope.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { readTopic } from '../helpers/kafka.ts';
import type { TopicRecord } from '../helpers/kafka.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let tenant: Tenant;
const opts = () => clientOptions(service.url, tenant.key);
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

before(async () => {
  service = await startTestService(FILE);
  tenant = await service.newTenant();
});
after(async () => {
  await service?.close();
});

async function eventsFor(resourceId: string, count: number): Promise<Array<{ record: TopicRecord; body: any }>> {
  const topic = `${service.config.kafkaTopicPrefix}catalog.events.v1`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    const records = await readTopic(service.config.kafkaBrokers ? [...service.config.kafkaBrokers] : [], topic).catch(() => []);
    // Delivery is at-least-once, a retried publish may land twice: a consumer keeps each id's first copy.
    const seen = new Set<string>();
    const mine = records.map((record) => ({ record, body: JSON.parse(record.value!.toString('utf8')) }))
      .filter((e) => e.body.resourceId === resourceId && !seen.has(e.body.id) && seen.add(e.body.id));
    if (mine.length >= count || Date.now() > deadline) return mine;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function assertEnvelope(event: { record: TopicRecord; body: any }, type: string, resourceId: string, externalSystem = 'erp') {
  assert.deepEqual(Object.keys(event.body).sort(), ['catalogId', 'createdAt', 'data', 'id', 'resourceId', 'type']);
  assert.equal(event.body.type, type);
  assert.equal(event.body.catalogId, tenant.catalogId);
  assert.equal(event.body.resourceId, resourceId);
  assert.match(event.body.createdAt, ISO_MS_UTC);
  assert.match(event.body.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.equal(event.record.key, JSON.stringify([tenant.catalogId, externalSystem, resourceId]), "the Kafka key is the item's identity");
  assert.deepEqual({ ...event.record.headers }, {
    'event-id': event.body.id, 'event-type': type, 'catalog-id': tenant.catalogId, 'content-type': 'application/json', 'schema-version': '1',
  });
}

test('created, updated, deleted: one event each in order, each carrying the item as GET answered it; unchanged emits none', async () => {
  const item = { externalSystem: 'erp', externalId: 'EV-1', sku: 'EV-SKU', name: 'Evented', price: 10.5, tags: ['a'], category: { name: 'Shirts' }, metadata: { colour: 'red', sizes: [1, 2] } };
  expectData(await api.upsertItem(item, opts()), 201);
  const afterCreate = expectData(await api.getItem('erp', 'EV-1', opts()), 200);
  expectData(await api.upsertItem(item, opts()), 200);
  expectData(await api.upsertItem({ ...item, name: 'Evented, renamed', price: 11, tags: ['a'], brand: { name: 'Acme' } }, opts()), 200);
  const afterUpdate = expectData(await api.getItem('erp', 'EV-1', opts()), 200);
  expectData(await api.deleteItem('erp', 'EV-1', opts()), 200);
  const events = await eventsFor('EV-1', 3);
  assert.deepEqual(events.map((e) => e.body.type), ['item.created', 'item.updated', 'item.deleted']);
  assertEnvelope(events[0]!, 'item.created', 'EV-1');
  assert.deepEqual(events[0]!.body.data, afterCreate);
  assertEnvelope(events[1]!, 'item.updated', 'EV-1');
  assert.deepEqual(events[1]!.body.data, { ...afterUpdate, previousContentHash: afterCreate.contentHash, changedFields: ['name', 'price', 'brand'],
    previousAttributes: { name: 'Evented', price: 10.5, brand: null },
  });
  assertEnvelope(events[2]!, 'item.deleted', 'EV-1');
  assert.deepEqual(events[2]!.body.data, afterUpdate, 'item.deleted carries the last stored item');
  assert.equal(new Set(events.map((e) => e.body.id)).size, 3);
});

test("one item's events share a key, and only its events: the same externalId in two systems, any characters", async () => {
  const ids = [['erp', 'EV-K'], ['pim', 'EV-K'], ['erp', 'EV-K","pim'], ['pim', 'EV-K é"\\ \u0001 \u2028 .']] as const;
  for (const [externalSystem, externalId] of ids) expectData(await api.upsertItem({ externalSystem, externalId, name: 'Keyed' }, opts()), 201);
  for (const [externalSystem, externalId] of ids) expectData(await api.deleteItem(externalSystem, externalId, opts()), 200);
  for (const [externalSystem, externalId] of ids) {
    // Written by SQL (item.created) and by JSON.stringify (item.deleted): the same key, byte for byte.
    const events = (await eventsFor(externalId, 2 * ids.filter(([, id]) => id === externalId).length)).filter((e) => e.body.data.externalSystem === externalSystem);
    assert.deepEqual(events.map((e) => e.body.type), ['item.created', 'item.deleted'], `${externalSystem}/${externalId}`);
    for (const event of events) assertEnvelope(event, event.body.type, externalId, externalSystem);
  }
});

test('bulk upserts emit one event per created or updated element, none for failures', async () => {
  const data = expectData(await api.bulkUpsertItems({ items: [
    { externalSystem: 'erp', externalId: 'EV-B1', name: 'One' },
    { externalSystem: 'erp', externalId: 'EV-B2', name: 'Two', gtin13: 'bad' },
  ] }, opts()), 200);
  assert.deepEqual(data.summary, { created: 1, updated: 0, unchanged: 0, failed: 1 });
  const one = await eventsFor('EV-B1', 1);
  assert.deepEqual(one.map((e) => e.body.type), ['item.created']);
  // Both elements were decided in one transaction: EV-B1's event being there means EV-B2's would be.
  assert.deepEqual(await eventsFor('EV-B2', 0), []);
});

test('a stock movement emits stock.adjusted with the movement, the item and the new on-hand', async () => {
  const created = expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'EV-S', sku: 'EV-S-SKU', name: 'Stocked', trackStock: true }, opts()), 201);
  const moved = expectData(await api.createStockMovement('erp', 'EV-S', { quantity: 7, reason: 'receipt', reference: 'PO-7' }, {}, opts()), 201);
  const events = (await eventsFor('EV-S', 2)).filter((e) => e.body.type === 'stock.adjusted');
  assert.equal(events.length, 1);
  assertEnvelope(events[0]!, 'stock.adjusted', 'EV-S');
  assert.deepEqual(events[0]!.body.data, {
    externalId: 'EV-S', externalSystem: 'erp', serviceId: created.serviceId, sku: 'EV-S-SKU', movementId: moved.movement.id,
    quantity: 7, reason: 'receipt', reference: 'PO-7', occurredAt: moved.movement.occurredAt, onHand: 7,
  });
});
