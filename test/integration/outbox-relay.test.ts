// The outbox end to end against real Postgres and a real Kafka broker: transactional writes, byte-exact publishing, and a broker outage.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { createOutboxRelay } from '../../consumers/relay/outbox-relay.ts';
import type { OutboxRelay } from '../../consumers/relay/outbox-relay.ts';
import { LEGACY_LANE, domainEvent, eventRow, itemEventKey, writeOutbox } from '../../domain/events/outbox.ts';
import { LANE_LOCK_SPACE } from '../../consumers/relay/lanes.ts';
import type { Item } from '../../generated/client.ts';
import type { OutboxRow } from '../../domain/events/outbox.ts';
import { loadConfig } from '../../platform/config/config.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { createKafkaClient } from '../../platform/kafka/client.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import { TOPICS, allTopicNames } from '../../platform/kafka/topics.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { freshDatabase, sqlClient } from '../helpers/database.ts';
import { privateBroker, readTopic, topicPrefixFor } from '../helpers/kafka.ts';
import type { TopicRecord } from '../helpers/kafka.ts';

// Its own broker (this run's ports and data folder), because the outage test stops it; other
// test files, and other runs, keep using the shared broker undisturbed.
const broker = privateBroker('kafka-test-relay');
const prefix = topicPrefixFor(import.meta.url);
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn');

let databaseUrl: string;
let db: pg.Client;
let orm: Orm;
let kafka: KafkaClient;
let relay: OutboxRelay;
let brokers: string[];

// Events name their catalog by its id (a UUID column of the outbox).
const CATALOG_ID = '0192f5f0-2b3c-7d4e-8f5a-6b7c8d9e0f1a';

/** An item whose strings re-serializing or SQL quoting would alter: quotes, backslashes, `?`, non-ASCII, an escaped NUL. */
function trickyItem(i: number, externalId: string): Item {
  return {
    serviceId: '0192f5e4-7b3a-7c1d-9e2f-3a4b5c6d7e8f', externalSystem: 'erp', externalId, sku: `SKU-${i}?`,
    name: `Café "Ω" \\ it's ${i}`, description: 'line\nbreak\u0000 ✓ 🚀', price: 10.5, cost: 1e21, weight: null, gtin13: null, ncm: null,
    category: null, brand: null, tags: [], metadata: { n: i, nested: { empty: {} } }, trackStock: false, onHand: 0, media: [],
    contentHash: 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb', createdAt: '2026-11-21T12:00:00.123Z', updatedAt: '2026-11-21T12:00:00.123Z',
  };
}

const keyOf = (externalId: string) => itemEventKey(CATALOG_ID, 'erp', externalId);

function itemEvent(i: number, resourceId = `ext-${i}`) {
  return domainEvent({ type: 'item.created', catalogId: CATALOG_ID, resourceId, data: trickyItem(i, resourceId) });
}

/** An event's outbox row, keyed by its item as the service keys them. */
const rowOf = (event: ReturnType<typeof itemEvent>) => eventRow(event, keyOf(event.resourceId));

/** The domain path: `writeOutbox` in a MikroORM `em.transactional`. */
async function writeInTransaction(rows: OutboxRow[], rollback = false): Promise<void> {
  const fail = new Error('roll back on purpose');
  await orm.em.fork().transactional(async (em) => {
    await writeOutbox(em, rows);
    if (rollback) throw fail;
  }).catch((error: unknown) => { if (error !== fail) throw error; });
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

const unsentCount = async (): Promise<number> => Number((await db.query('SELECT count(*) AS n FROM outbox_events WHERE sent_at IS NULL')).rows[0].n);

function byEventId(records: TopicRecord[]): Map<string, TopicRecord[]> {
  const map = new Map<string, TopicRecord[]>();
  for (const record of records) {
    const id = record.headers['event-id'] ?? '';
    map.set(id, [...(map.get(id) ?? []), record]);
  }
  return map;
}

function assertPublishedExactly(records: TopicRecord[], rows: OutboxRow[]): { duplicates: number } {
  const published = byEventId(records);
  let duplicates = 0;
  for (const row of rows) {
    const copies = published.get(row.eventId);
    assert.ok(copies && copies.length > 0, `event ${row.eventId} missing from the topic`);
    duplicates += copies.length - 1;
    for (const copy of copies) {
      assert.equal(copy.key, row.key);
      assert.ok(copy.value?.equals(Buffer.from(row.payload, 'utf8')), `payload of ${row.eventId} not byte-identical`);
      assert.equal(copy.headers['event-type'], 'item.created');
    }
  }
  return { duplicates };
}

before(async () => {
  databaseUrl = await freshDatabase(import.meta.url);
  // The real schema, migrations and all: the outbox table is the product's, not a copy.
  orm = await openDatabase({ databaseUrl, logger });
  db = await sqlClient(databaseUrl);
  brokers = await broker.start();
  const config = loadConfig({ ...process.env, KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: prefix, LOG_LEVEL: 'warn' });
  // Few connection retries: the outage test waits for the relay to give up once.
  kafka = await createKafkaClient(config, logger, { clientId: 'test-outbox-relay', retry: { retries: 2, initialRetryTime: 200, maxRetryTime: 1000 } });
  // A poll interval longer than any wait below: only NOTIFY can make the relay publish in time.
  relay = createOutboxRelay({ orm, databaseUrl, kafka, logger, pollIntervalMs: 120_000, maxBackoffMs: 2000 });
  await relay.start();
});

after(async () => {
  await relay?.stop();
  // Unique prefixes pile up topics run after run; each costs the broker start-up time.
  await kafka?.withAdmin((admin) => admin.deleteTopics({ topics: allTopicNames(prefix) })).catch(() => undefined);
  await kafka?.disconnect();
  await orm?.close();
  await db?.end();
  // Frees the 2-core machine, and the run's data folder; the next run starts its own in a few seconds.
  await broker.remove();
});

describe('outbox relay', () => {
  test('events committed in a transaction reach the topic with the same key and bytes; a rollback publishes nothing', async () => {
    const committed = [itemEvent(1), itemEvent(2), itemEvent(3, 'ext-1')].map(rowOf);
    const rolledBack = [itemEvent(99)].map(rowOf);
    await writeInTransaction(committed);
    await writeInTransaction(rolledBack, true);

    await waitUntil('the relay to publish', async () => (await unsentCount()) === 0, 30_000);
    const rows = (await db.query('SELECT event_id FROM outbox_events')).rows.map((r: { event_id: string }) => r.event_id);
    assert.deepEqual(rows.sort(), committed.map((r) => r.eventId).sort(), 'only the committed rows exist');

    const records = await readTopic(brokers, kafka.topic(TOPICS.events));
    assertPublishedExactly(records, committed);
    assert.equal(byEventId(records).has(rolledBack[0]!.eventId), false, 'rolled-back event was published');
    // Same key, same partition, in commit order: ext-1 got event 1 before event 3. Delivery is
    // at-least-once (a produce retried after a leader change may land twice), so the order is
    // that of each event's first copy.
    const ext1 = new Set(records.filter((r) => r.key === keyOf('ext-1')).map((r) => r.headers['event-id']));
    assert.deepEqual([...ext1], [committed[0]!.eventId, committed[2]!.eventId]);
  });

  test('a write outside a transaction commits on its own and is published the same way', async () => {
    const rows = [itemEvent(7), itemEvent(8)].map(rowOf);
    await writeOutbox(orm.em.fork(), rows);
    await waitUntil('the relay to publish', async () => (await unsentCount()) === 0, 30_000);
    assertPublishedExactly(await readTopic(brokers, kafka.topic(TOPICS.events)), rows);
  });

  test('while writers are busy the relay gathers several commits into one claim; an event written alone is published at once', async () => {
    // This test's own relay, with a linger long enough to see; the file's relay comes back after.
    await relay.stop();
    const lingering = createOutboxRelay({ orm, databaseUrl, kafka, logger, pollIntervalMs: 120_000, lingerMs: 3000, lingerAfterRows: 5 });
    await lingering.start();
    try {
      const alone = [itemEvent(501)].map(rowOf);
      await writeInTransaction(alone);
      // A claim of fewer than lingerAfterRows rows is followed by a wait for NOTIFY, not by the linger.
      await waitUntil('the lone event to be published', async () => (await unsentCount()) === 0, 2000);
      const first = Array.from({ length: 5 }, (_, i) => rowOf(itemEvent(510 + i)));
      await writeInTransaction(first);
      await waitUntil('the first busy commit to be published', async () => (await unsentCount()) === 0, 2000);
      const claimsBefore = lingering.stats.batches;
      // Three commits while the relay lingers after a claim of 5 rows: one claim publishes them all.
      const more: OutboxRow[] = [];
      for (let tx = 0; tx < 3; tx++) {
        const rows = Array.from({ length: 5 }, (_, i) => rowOf(itemEvent(520 + tx * 5 + i)));
        await writeInTransaction(rows);
        more.push(...rows);
      }
      await waitUntil('the commits made during the linger to be published', async () => (await unsentCount()) === 0, 15_000);
      assert.equal(lingering.stats.batches, claimsBefore + 1, 'the three commits went out in one claim');
      assert.equal(lingering.stats.published, alone.length + first.length + more.length);
      assertPublishedExactly(await readTopic(brokers, kafka.topic(TOPICS.events)), [...alone, ...first, ...more]);
    } finally {
      await lingering.stop();
      relay = createOutboxRelay({ orm, databaseUrl, kafka, logger, pollIntervalMs: 120_000, maxBackoffMs: 2000 });
      await relay.start();
    }
  });

  test('a transaction\'s events are one outbox row; a claim takes whole rows up to its size, and a key\'s events keep their order', async () => {
    await relay.stop();
    const claiming = createOutboxRelay({ orm, databaseUrl, kafka, logger, batchSize: 4 });
    try {
      const transactions = [6, 2, 3].map((size, tx) => Array.from({ length: size }, (_, i) => rowOf(itemEvent(600 + tx * 10 + i, 'ext-order'))));
      for (const rows of transactions) await writeInTransaction(rows);
      const ids = transactions.flat().map((r) => r.eventId);
      assert.deepEqual((await db.query('SELECT cardinality(event_ids) AS n FROM outbox WHERE event_ids && $1::uuid[] ORDER BY id', [ids])).rows.map((r: { n: number }) => r.n),
        [6, 2, 3], 'one row a transaction');
      // The first row is larger than a claim and goes alone; the next two do not fit one claim together.
      assert.deepEqual([await claiming.relayOnce(), await claiming.relayOnce(), await claiming.relayOnce(), await claiming.relayOnce()], [6, 2, 3, 0]);
      const records = await readTopic(brokers, kafka.topic(TOPICS.events));
      assertPublishedExactly(records, transactions.flat());
      const order = new Set(records.filter((r) => r.key === keyOf('ext-order')).map((r) => r.headers['event-id']));
      assert.deepEqual([...order], ids);
    } finally {
      relay = createOutboxRelay({ orm, databaseUrl, kafka, logger, pollIntervalMs: 120_000, maxBackoffMs: 2000 });
      await relay.start();
    }
  });

  test('three relays share the lanes: each publishes some, every key keeps its order, and rows from before lanes go first', async () => {
    await relay.stop();
    const catalogs = Array.from({ length: 12 }, () => randomUUID());
    const eventOf = (catalogId: string, externalId: string, i: number) => {
      const event = domainEvent({ type: 'item.created', catalogId, resourceId: externalId, data: trickyItem(i, externalId) });
      return eventRow(event, itemEventKey(catalogId, 'erp', externalId));
    };
    // Rows written before there were lanes: one an item, in the lane of their own.
    const legacy = catalogs.map((catalogId, c) => eventOf(catalogId, 'ext-0', 2000 + c));
    await writeInTransaction(legacy);
    await db.query('UPDATE outbox SET lane = $1 WHERE event_ids && $2::uuid[]', [LEGACY_LANE, legacy.map((r) => r.eventId)]);
    const relays = Array.from({ length: 3 }, () => createOutboxRelay({ orm, databaseUrl, kafka, logger, pollIntervalMs: 500, maxBackoffMs: 2000 }));
    try {
      for (const each of relays) await each.start();
      // Each relay settles on its share of the 17 lanes (16 and the one from before lanes).
      await waitUntil('the lanes to be shared', async () => {
        const { rows } = await db.query(`SELECT count(*)::int AS lanes FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
          AND classid = $1::int4::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) GROUP BY pid`, [LANE_LOCK_SPACE]);
        return rows.length === 3 && rows.every((r: { lanes: number }) => r.lanes >= 5);
      }, 60_000);
      const written: OutboxRow[] = [];
      for (let tx = 0; tx < 20; tx++) {
        const rows = catalogs.flatMap((catalogId, c) => Array.from({ length: 5 }, (_, k) => eventOf(catalogId, `ext-${k}`, 3000 + tx * 100 + c * 5 + k)));
        await writeInTransaction(rows);
        written.push(...rows);
      }
      await waitUntil('every lane to drain', async () => (await unsentCount()) === 0, 60_000);
      assert.ok(relays.every((each) => each.stats.published > 0), `every relay published: ${relays.map((each) => each.stats.published)}`);
      const records = await readTopic(brokers, kafka.topic(TOPICS.events));
      assertPublishedExactly(records, [...legacy, ...written]);
      for (const catalogId of catalogs) {
        for (let k = 0; k < 5; k++) {
          const key = itemEventKey(catalogId, 'erp', `ext-${k}`);
          const expected = [...legacy, ...written].filter((r) => r.key === key).map((r) => r.eventId);
          const seen = [...new Set(records.filter((r) => r.key === key).map((r) => r.headers['event-id']))];
          assert.deepEqual(seen, expected, `order of ${key}`);
        }
      }
    } finally {
      for (const each of relays) await each.stop();
      relay = createOutboxRelay({ orm, databaseUrl, kafka, logger, pollIntervalMs: 120_000, maxBackoffMs: 2000 });
      await relay.start();
    }
  });

  test('events written while the broker is down are all published once it is back', async (t) => {
    const failuresBefore = relay.stats.failures;
    await broker.stop();

    const written: OutboxRow[] = [];
    for (let tx = 0; tx < 6; tx++) {
      const rows = Array.from({ length: 10 }, (_, i) => rowOf(itemEvent(1000 + tx * 10 + i, `ext-${i % 4}`)));
      await writeInTransaction(rows);
      written.push(...rows);
    }
    // The relay must have tried and rolled back at least once while Kafka was away.
    await waitUntil('a failed publish attempt', async () => relay.stats.failures > failuresBefore, 60_000);
    assert.equal(await unsentCount(), written.length, 'nothing is marked sent while Kafka is down');

    const restarted = Date.now();
    await broker.start();
    await waitUntil('the backlog to drain', async () => (await unsentCount()) === 0, 90_000);
    t.diagnostic(`backlog drained ${Date.now() - restarted} ms after the broker restart; failures during the outage: ${relay.stats.failures - failuresBefore}`);

    const records = await readTopic(brokers, kafka.topic(TOPICS.events));
    const { duplicates } = assertPublishedExactly(records, written);
    t.diagnostic(`${written.length} events written during the outage, ${duplicates} duplicate(s) on the topic`);
    // Per key, Kafka holds the events in the order they were committed (duplicates aside).
    for (let key = 0; key < 4; key++) {
      const expected = written.filter((r) => r.key === keyOf(`ext-${key}`)).map((r) => r.eventId);
      const seen = [...new Set(records.filter((r) => r.key === keyOf(`ext-${key}`) && expected.includes(r.headers['event-id'] ?? '')).map((r) => r.headers['event-id']))];
      assert.deepEqual(seen, expected, `order of key ext-${key}`);
    }
  });
});
