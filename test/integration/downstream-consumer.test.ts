// A downstream system written from asyncapi.yaml alone mirrors the catalog from Kafka: the changelog folded by key, and the events acted on, each equal to the API's list.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import type { Consumer } from 'kafkajs';
import { parse } from 'yaml';
import * as api from '../../generated/client.ts';
import type { Item, ItemMedia, ItemPayload } from '../../generated/client.ts';
import { checkKafkaRecord } from '../helpers/asyncapi.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { makeImage, startImageOrigin } from '../helpers/image-origin.ts';
import type { ImageOrigin } from '../helpers/image-origin.ts';
import { item as line, jsonl, runImport, startImportService } from '../helpers/imports.ts';
import { SETTLE_MS, eventually, settledItem } from '../helpers/media.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let origin: ImageOrigin;
let service: TestService;
let tenant: Tenant;
let neighbour: Tenant;
let sql: Awaited<ReturnType<typeof sqlClient>>;
let consumer: Consumer | undefined;
const opts = () => clientOptions(service.url, tenant.key);

/** What the downstream system knows, built from Kafka alone. */
const mirror = {
  /** catalog.items.v1 folded by key: the last value of each key, a tombstone removing it. */
  changelog: new Map<string, Item>(),
  /** catalog.events.v1 acted on: items from item.* and stock.adjusted, image states from media.*. */
  fromEvents: new Map<string, Item>(),
  images: new Map<string, Pick<ItemMedia, 'assetId' | 'status' | 'contentType' | 'width' | 'height' | 'byteSize' | 'contentSha256' | 'renditions' | 'failure'>>(),
  eventIds: new Set<string>(),
  /** Events that are not about items (imports, webhook tests), by type. */
  others: new Map<string, number>(),
};

/** The channel addresses of asyncapi.yaml, the topic prefix (KAFKA_TOPIC_PREFIX) put in. */
function topicsFromDocument(prefix: string): { items: string; events: string } {
  const document = parse(readFileSync(new URL('../../asyncapi.yaml', import.meta.url), 'utf8')) as { channels: Record<string, { address: string }> };
  const address = (suffix: string) => {
    const found = Object.values(document.channels).find((channel) => channel.address.endsWith(suffix));
    assert.ok(found, `asyncapi.yaml has no channel for ${suffix}`);
    return found.address.replace(/\{[^}]+\}/, prefix);
  };
  return { items: address('catalog.items.v1'), events: address('catalog.events.v1') };
}

const identity = (catalogId: string, externalSystem: string, externalId: string) => JSON.stringify([catalogId, externalSystem, externalId]);

function onEvent(event: { id: string; type: string; catalogId: string; data: any }): void {
  if (mirror.eventIds.has(event.id)) return; // at least once: the same id again is the same event
  mirror.eventIds.add(event.id);
  const { data } = event;
  switch (event.type) {
    case 'item.created':
    case 'item.updated': {
      const { previousContentHash: _previous, changedFields: _changed, previousAttributes: _attributes, ...item } = data;
      mirror.fromEvents.set(identity(event.catalogId, item.externalSystem, item.externalId), item);
      break;
    }
    case 'item.deleted':
      mirror.fromEvents.delete(identity(event.catalogId, data.externalSystem, data.externalId));
      break;
    case 'stock.adjusted': {
      const item = mirror.fromEvents.get(identity(event.catalogId, data.externalSystem, data.externalId));
      if (item) item.onHand = data.onHand;
      break;
    }
    case 'media.ingested':
      mirror.images.set(`${event.catalogId}:${data.sourceUrlHash}`, {
        assetId: data.assetId, status: 'ingested', contentType: data.contentType, width: data.width, height: data.height, byteSize: data.byteSize,
        contentSha256: data.contentSha256, renditions: data.renditions, failure: null,
      });
      break;
    case 'media.ingestion_failed':
      mirror.images.set(`${event.catalogId}:${data.sourceUrlHash}`, {
        assetId: data.assetId, status: 'failed', contentType: null, width: null, height: null, byteSize: null, contentSha256: null, renditions: [],
        failure: { reason: data.reason, message: data.message, attempts: data.attempts, lastAttemptAt: data.lastAttemptAt },
      });
      break;
    default:
      mirror.others.set(event.type, (mirror.others.get(event.type) ?? 0) + 1);
  }
}

/** The items the events tell of: an image's own events may arrive before or after its items' (other keys), so its state is applied on reading. */
function itemsFromEvents(catalogId: string): Item[] {
  return [...mirror.fromEvents.entries()].filter(([key]) => JSON.parse(key)[0] === catalogId).map(([, item]) => ({
    ...item,
    media: item.media.map((m) => ({ ...m, ...mirror.images.get(`${catalogId}:${m.sourceUrlHash}`) })),
  }));
}

const changelogItems = (catalogId: string) => [...mirror.changelog.entries()].filter(([key]) => JSON.parse(key)[0] === catalogId).map(([, item]) => item);

async function apiItems(tenantOf: Tenant): Promise<Item[]> {
  const items: Item[] = [];
  let cursor: string | undefined;
  do {
    const page = expectData(await api.listItems({ limit: 200, ...(cursor ? { cursor } : {}) }, clientOptions(service.url, tenantOf.key)), 200);
    items.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return items;
}

const byIdentity = (items: Item[]) => [...items].sort((a, b) => identity('', a.externalSystem, a.externalId).localeCompare(identity('', b.externalSystem, b.externalId)));

/** The item as events and the changelog carry it: stored images' addresses expire, so records hold none. */
const withoutAddresses = (item: Item): Item => ({
  ...item, media: item.media.map((m) => ({ ...m, storedUrl: null, renditions: m.renditions.map((r) => ({ ...r, storedUrl: null })) })),
});

/** Waits until both mirrors of the catalog equal the API's list, then asserts it (with the diff when they never do). */
async function assertMirrored(tenantOf: Tenant): Promise<Item[]> {
  let expected: Item[] = [];
  const equal = (actual: Item[]) => JSON.stringify(byIdentity(actual)) === JSON.stringify(byIdentity(expected));
  await eventually(async () => {
    expected = (await apiItems(tenantOf)).map(withoutAddresses);
    return equal(changelogItems(tenantOf.catalogId)) && equal(itemsFromEvents(tenantOf.catalogId)) ? true : undefined;
  }, 'the mirrors to equal the API', SETTLE_MS).catch(() => undefined);
  assert.deepEqual(byIdentity(changelogItems(tenantOf.catalogId)), byIdentity(expected), 'the changelog folded by key is the catalog');
  assert.deepEqual(byIdentity(itemsFromEvents(tenantOf.catalogId)), byIdentity(expected), 'the events acted on give the catalog');
  return expected;
}

const changelogRows = async () => Number((await sql.query(`SELECT count(*) FROM outbox_events WHERE topic = 'catalog.items.v1'`)).rows[0].count);

before(async () => {
  origin = await startImageOrigin();
  service = await startImportService(FILE, { OUTBOUND_ALLOW_PRIVATE: 'true', STORAGE_DIR: mkdtempSync(join(tmpdir(), 'catalog-downstream-')) });
  tenant = await service.newTenant();
  neighbour = await service.newTenant();
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await consumer?.disconnect();
  await sql?.end();
  await service?.close();
  await origin?.close();
});

test('after creates, updates, deletes, stock movements and an import, a consumer from offset 0 mirrors the catalog from the changelog and from the events', async () => {
  const payload = (n: number, overrides: Partial<ItemPayload> = {}): ItemPayload => ({
    externalSystem: n % 2 ? 'erp' : 'pim', externalId: `D-${n}`, sku: `D-SKU-${n}`, name: `Downstream ${n}`, price: n + 0.99,
    category: { name: n % 3 ? 'Shirts' : 'Shoes' }, tags: [`t${n % 4}`], metadata: { n, nested: { ok: true } }, trackStock: n < 4, ...overrides,
  });
  const created = expectData(await api.bulkUpsertItems({ items: Array.from({ length: 20 }, (_, n) => payload(n)) }, opts()), 200);
  assert.deepEqual(created.summary, { created: 20, updated: 0, unchanged: 0, failed: 0 });
  const updated = expectData(await api.bulkUpsertItems({ items: Array.from({ length: 5 }, (_, n) => payload(n, { price: 1 + n, brand: { name: 'Acme' } })) }, opts()), 200);
  assert.deepEqual(updated.summary, { created: 0, updated: 5, unchanged: 0, failed: 0 });
  for (const n of [0, 1, 2]) expectData(await api.createStockMovement(payload(n).externalSystem, `D-${n}`, { quantity: 5 + n, reason: 'receipt' }, {}, opts()), 201);
  for (const n of [5, 6, 7]) expectData(await api.deleteItem(payload(n).externalSystem, `D-${n}`, opts()), 200);
  // The same identity in another catalog is another key.
  expectData(await api.upsertItem(payload(8), clientOptions(service.url, neighbour.key)), 201);

  // An unchanged upsert writes nothing, on either topic.
  const before = await changelogRows();
  const unchanged = expectData(await api.bulkUpsertItems({ items: Array.from({ length: 5 }, (_, n) => payload(10 + n)) }, opts()), 200);
  assert.equal(unchanged.summary.unchanged, 5);
  assert.equal(await changelogRows(), before, 'an unchanged upsert appends no changelog record');

  // An import: new lines, changed lines, and lines already stored.
  const job = await runImport(opts(), jsonl([
    ...Array.from({ length: 5 }, (_, n) => line(`D-IMP-${n}`)),
    payload(11, { name: 'Renamed by the import' }), payload(12, { price: 1000 }),
    payload(13), payload(14),
  ]));
  assert.equal(job.status, 'completed');
  assert.deepEqual({ ...job.counts }, { total: 9, processed: 9, succeeded: 7, failed: 0, unchanged: 2 });
  const changelogAfterImport = await changelogRows();
  const again = await runImport(opts(), jsonl([...Array.from({ length: 5 }, (_, n) => line(`D-IMP-${n}`))]));
  assert.equal(again.counts.unchanged, 5);
  assert.equal(await changelogRows(), changelogAfterImport, 'an unchanged re-import appends no changelog record');

  // The downstream system, from the document alone: its own group, both public topics from the start.
  const topics = topicsFromDocument(service.config.kafkaTopicPrefix);
  const kafka = new Kafka({ clientId: 'downstream-test', brokers: [...service.config.kafkaBrokers!], logLevel: logLevel.NOTHING });
  consumer = kafka.consumer({ groupId: `downstream-${randomBytes(6).toString('hex')}` });
  await consumer.connect();
  await consumer.subscribe({ topics: [topics.items, topics.events], fromBeginning: true });
  const invalid: string[] = [];
  await consumer.run({
    eachMessage: async ({ topic, message }) => {
      const record = { key: message.key?.toString('utf8') ?? null, value: message.value, headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])) };
      try {
        checkKafkaRecord(topic, record);
      } catch (error) {
        invalid.push(`${topic}: ${(error as Error).message}`);
        return;
      }
      if (topic === topics.items) {
        if (record.value === null) mirror.changelog.delete(record.key!);
        else {
          // The value is the item as GET answers it, with its catalog (the key's first element) in front.
          const { catalogId, ...item } = JSON.parse(record.value.toString('utf8')) as Item & { catalogId: string };
          if (catalogId !== JSON.parse(record.key!)[0]) invalid.push(`${topic}: catalogId ${catalogId} is not the key's ${record.key}`);
          mirror.changelog.set(record.key!, item);
        }
      } else {
        onEvent(JSON.parse(record.value!.toString('utf8')));
      }
    },
  });

  const items = await assertMirrored(tenant);
  assert.equal(items.length, 20 - 3 + 5);
  assert.deepEqual(items.filter((i) => i.trackStock && i.onHand > 0).map((i) => i.onHand).sort(), [5, 6, 7]);
  await assertMirrored(neighbour);
  assert.deepEqual(invalid, [], 'every message matches asyncapi.yaml');
  assert.ok((mirror.others.get('import.completed') ?? 0) >= 2, 'the imports were reported');
});

test('live: an image ingested, another failing, and an item deleted and made again reach the mirrors', async () => {
  assert.ok(consumer, 'the first test started the downstream consumer');
  origin.serve('/img/ok.png', { body: await makeImage('png', 64, 48, 3), contentType: 'image/png' });
  const media = [{ url: origin.at('/img/ok.png'), role: 'primary' as const, sortOrder: 0 }, { url: origin.at('/img/missing.png'), role: 'gallery' as const, sortOrder: 1 }];
  for (const id of ['D-IMG-1', 'D-IMG-2']) expectData(await api.upsertItem({ externalSystem: 'erp', externalId: id, name: `Pictured ${id}`, media }, opts()), 201);
  for (const id of ['D-IMG-1', 'D-IMG-2']) await settledItem(service.url, tenant.key, id);
  expectData(await api.deleteItem('pim', 'D-0', opts()), 200);
  expectData(await api.upsertItem({ externalSystem: 'pim', externalId: 'D-0', name: 'Made again' }, opts()), 201);
  const items = await assertMirrored(tenant);
  const pictured = items.find((i) => i.externalId === 'D-IMG-1')!;
  assert.deepEqual(pictured.media.map((m) => m.status), ['ingested', 'failed']);
  assert.equal(items.find((i) => i.externalId === 'D-0')!.name, 'Made again');
});
