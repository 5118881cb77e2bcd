// What a reader of the public topics is told: changelog records that carry their event's headers and catalog, commit times as Kafka timestamps, and GET /events/publishing to know it caught up.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { startConsumersProcess } from '../helpers/consumers-process.ts';
import { readTopic } from '../helpers/kafka.ts';
import type { TopicRecord } from '../helpers/kafka.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let shop: Tenant;
let other: Tenant;
const children = new Set<ChildProcess>();
/** When the relay started: every record was written before, and published after. */
let relayStartedAt: number;
/** The id of the last event `shop`'s writes made. */
let lastEventId: string;

const opts = (tenant: Tenant) => clientOptions(service.url, tenant.key);
const publishing = async (tenant: Tenant) => expectData(await api.getEventPublishing(opts(tenant)), 200);

before(async () => {
  // The API alone: changes wait in the outbox until a consumers process (the relay) starts.
  service = await startTestService(FILE, { ROLE: 'api' });
  [shop, other] = [await service.newTenant(), await service.newTenant()];
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await service?.close();
});

/** `[catalogId, …]` → the catalog id a record's key names. */
const catalogOf = (record: TopicRecord) => (JSON.parse(record.key!) as string[])[0];
const readPublic = async () => ({
  events: (await readTopic([...service.kafka.brokers], service.kafka.topic('catalog.events.v1'))).filter((r) => catalogOf(r) === shop.catalogId),
  items: (await readTopic([...service.kafka.brokers], service.kafka.topic('catalog.items.v1'))).filter((r) => catalogOf(r) === shop.catalogId),
});

test('while nothing publishes, GET /events/publishing counts the catalog\'s own changes and tells how long the oldest waited', async () => {
  const item = { externalSystem: 'erp', externalId: 'KR-1', name: 'Mug', trackStock: true };
  expectData(await api.upsertItem(item, opts(shop)), 201);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'KR-2', name: 'Plate' }, opts(shop)), 201);
  // A stock movement writes its event and, apart, the item's changelog record: one change.
  expectData(await api.createStockMovement('erp', 'KR-1', { quantity: 5, reason: 'receipt' }, {}, opts(shop)), 201);
  expectData(await api.upsertItem({ ...item, name: 'Mug, blue' }, opts(shop)), 200);
  expectData(await api.deleteItem('erp', 'KR-2', opts(shop)), 200);
  expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'OTHER-1', name: 'Elsewhere' }, opts(other)), 201);

  const [written] = await service.orm.em.getConnection().execute<Array<{ oldest: string; last: string }>>(
    `SELECT to_char(min(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS oldest, max(event_id::text) AS last
       FROM outbox_events WHERE catalog_id = ?`, [shop.catalogId]);
  lastEventId = written!.last;
  const state = await publishing(shop);
  assert.equal(state.caughtUp, false);
  assert.equal(state.unpublished, 5);
  assert.ok(state.oldestUnpublishedAgeSeconds > 0, `waited ${state.oldestUnpublishedAgeSeconds} s`);
  assert.equal(state.publishedThrough, written!.oldest, 'nothing written after the oldest waiting change is known to be on Kafka');
  assert.equal(state.lastPublished, null);
  assert.equal((await publishing(other)).unpublished, 1, 'another catalog counts its own changes only');
});

test('once the relay ran, the catalog is caught up and names its newest event on Kafka, stamped with its commit time', async () => {
  relayStartedAt = Date.now();
  await startConsumersProcess({ file: FILE, databaseUrl: service.databaseUrl, env: {}, name: 'consumers', children });
  const deadline = Date.now() + 60_000;
  let state = await publishing(shop);
  while (!state.caughtUp && Date.now() < deadline) {
    await new Promise((done) => setTimeout(done, 250));
    state = await publishing(shop);
  }
  assert.equal(state.caughtUp, true);
  assert.equal(state.unpublished, 0);
  assert.equal(state.oldestUnpublishedAgeSeconds, 0);
  assert.ok(state.lastPublished);
  assert.equal(state.lastPublished.eventId, lastEventId);
  assert.ok(Date.parse(state.publishedThrough) >= Date.parse(state.lastPublished.committedAt));
  assert.ok(Date.parse(state.lastPublished.publishedAt) >= relayStartedAt - 1000, 'published by the relay started later');
  const { events } = await readPublic();
  const newest = events.find((record) => record.headers['event-id'] === lastEventId);
  assert.ok(newest, 'the newest event is on the topic');
  assert.equal(Number(newest.timestamp), Date.parse(state.lastPublished.committedAt), 'its Kafka timestamp is its commit time');
});

test('every changelog record carries the headers of the event that reports its change and its catalogId; both topics the commit time', async () => {
  const { events, items } = await readPublic();
  const eventById = new Map(events.map((record) => [record.headers['event-id'], record]));
  const types = items.map((record) => `${JSON.parse(record.key!)[2]} ${record.headers['event-type']}`).sort();
  assert.deepEqual(types, ['KR-1 item.created', 'KR-1 item.updated', 'KR-1 stock.adjusted', 'KR-2 item.created', 'KR-2 item.deleted']);
  for (const record of items) {
    const event = eventById.get(record.headers['event-id']);
    assert.ok(event, `no event ${record.headers['event-id']} for the changelog record`);
    assert.deepEqual(record.headers, event.headers, 'the same five headers as its event');
    assert.equal(record.headers['catalog-id'], shop.catalogId);
    assert.equal(record.timestamp, event.timestamp, 'stamped like its event');
    if (record.value !== null) assert.equal(JSON.parse(record.value.toString('utf8')).catalogId, shop.catalogId);
  }
  const stocked = items.find((record) => record.headers['event-type'] === 'stock.adjusted')!;
  assert.equal(JSON.parse(stocked.value!.toString('utf8')).onHand, 5);
  const rows = await service.orm.em.getConnection().execute<Array<{ event_id: string; ms: string }>>(
    `SELECT event_id, floor(extract(epoch FROM created_at) * 1000)::bigint::text AS ms FROM outbox_events WHERE catalog_id = ?`, [shop.catalogId]);
  const written = new Map(rows.map((row) => [row.event_id, row.ms]));
  for (const record of [...events, ...items]) {
    assert.equal(record.timestamp, written.get(record.headers['event-id']!), 'the time the change was written');
    assert.ok(Number(record.timestamp) < relayStartedAt, 'not the time it was published');
  }
});
