// Upgrading a database with items: migration 0010 writes each existing item's changelog record, the item exactly as GET returned it then, and the relay publishes it as asyncapi.yaml describes a record.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { createOutboxRelay } from '../../consumers/relay/outbox-relay.ts';
import { itemEventKey } from '../../domain/events/outbox.ts';
import { getItem } from '../../domain/items/read.ts';
import { newId } from '../../platform/ids.ts';
import { loadConfig } from '../../platform/config/config.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { createKafkaClient } from '../../platform/kafka/client.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import { TOPICS, allTopicNames } from '../../platform/kafka/topics.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { dropDatabase, freshDatabase, sqlClient } from '../helpers/database.ts';
import { checkKafkaRecord } from '../helpers/asyncapi.ts';
import { readTopic, sharedBrokers, topicPrefixFor } from '../helpers/kafka.ts';

const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn');
let databaseUrl: string;
let orm: Orm;
let db: pg.Client;
let kafka: KafkaClient | undefined;
const prefix = topicPrefixFor(import.meta.url);

before(async () => {
  databaseUrl = await freshDatabase(import.meta.url);
  // The schema as it was before the changelog: every migration up to 0009.
  orm = await openDatabase({ databaseUrl, logger, migrate: false });
  await orm.migrator.up({ to: '0009-event-log' });
  db = await sqlClient(databaseUrl);
});
after(async () => {
  // Unique prefixes pile up topics run after run; each costs the broker start-up time.
  await kafka?.withAdmin((admin) => admin.deleteTopics({ topics: allTopicNames(prefix) })).catch(() => undefined);
  await kafka?.disconnect();
  await db?.end();
  await orm?.close();
  if (databaseUrl) await dropDatabase(databaseUrl);
});

test('every item stored before the upgrade gets one record, equal to what GET answers after it', async () => {
  const catalogId = newId();
  const [categoryId, brandId, ingestedHash, pendingHash] = [newId(), newId(), 'a'.repeat(64), 'b'.repeat(64)];
  await db.query(`INSERT INTO catalogs (id, name, owner_email) VALUES ($1, $2, 'ops@example.com')`, [catalogId, `upgrade-${catalogId}`]);
  await db.query(`INSERT INTO categories (id, catalog_id, name, name_key) VALUES ($1, $2, 'T-Shirts "Ω"', 't-shirts "ω"')`, [categoryId, catalogId]);
  await db.query(`INSERT INTO brands (id, catalog_id, name, name_key) VALUES ($1, $2, 'Acme', 'acme')`, [brandId, catalogId]);
  await db.query(`INSERT INTO media_assets (id, catalog_id, source_url, source_url_hash, status, content_type, width, height, byte_size)
    VALUES ($1, $2, 'https://cdn.example.com/a.png', $3, 'ingested', 'image/png', 640, 480, 123456)`, [newId(), catalogId, ingestedHash]);
  const media = [
    { url: 'https://cdn.example.com/b.png', role: 'gallery', sortOrder: 2, sourceUrlHash: pendingHash },
    { url: 'https://cdn.example.com/a.png', role: 'primary', sortOrder: 0, sourceUrlHash: ingestedHash },
  ];
  const items = [
    ['erp', 'PLAIN', null, 'Plain', null, null, null, null, null, null, [], null, '[]', false, 0],
    ['erp', 'FULL "é" \u2028', 'SKU-1', 'Full, "quoted" \\ item', 'Line\nbreak', '19.9000', '7.2500', '0.180000', categoryId, brandId,
      ['cotton', 'summer'], JSON.stringify({ colour: 'red', sizes: [1, 2.5], nested: { empty: {} } }), JSON.stringify(media), true, 42],
  ] as const;
  for (const [system, id, sku, name, description, price, cost, weight, category, brand, tags, metadata, itemMedia, trackStock, onHand] of items) {
    await db.query(`INSERT INTO items (id, catalog_id, external_system, external_id, sku, name, description, price, cost, weight,
        category_id, brand_id, tags, metadata, media, track_stock, on_hand, content_hash)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
    [newId(), catalogId, system, id, sku, name, description, price, cost, weight, category, brand, tags, metadata, itemMedia, trackStock, onHand, 'c'.repeat(64)]);
  }

  await orm.migrator.up();

  const { rows } = await db.query<{ key: string; payload: string; event_id: string }>(
    `SELECT key, payload, event_id FROM outbox_events WHERE topic = 'catalog.items.v1' ORDER BY batch_id, ord`);
  assert.equal(rows.length, items.length);
  for (const [system, id] of items) {
    const row = rows.find((r) => r.key === itemEventKey(catalogId, system, id));
    assert.ok(row, `no record for ${system}/${id}`);
    // The record keeps the item's shape of that version: the media fields added since (0012) are
    // on the records written after them.
    const now = await getItem(orm.em.fork(), catalogId, system, id);
    const then = { ...now, media: now.media.map(({ assetId: _a, contentSha256: _c, storedUrl: _s, renditions: _r, failure: _f, ...entry }) => entry) };
    assert.deepEqual(JSON.parse(row.payload), then, `${system}/${id}`);
  }

  // Published, each is a record like any other: its catalogId first in the value, the headers of
  // a record, `item.updated` as no event reports it. An item without media matches asyncapi.yaml
  // whole; one with media keeps the media shape of that version (above).
  const brokers = await sharedBrokers();
  const config = loadConfig({ ...process.env, DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: prefix, LOG_LEVEL: 'warn' });
  kafka = await createKafkaClient(config, logger, { clientId: 'test-migration-changelog' });
  assert.equal(await createOutboxRelay({ orm, databaseUrl, kafka, logger }).relayOnce(), items.length);
  const records = await readTopic(brokers, `${prefix}${TOPICS.items}`, 30_000, false);
  assert.equal(records.length, items.length);
  for (const row of rows) {
    const record = records.find((r) => r.key === row.key)!;
    assert.deepEqual(record.headers, {
      'event-id': row.event_id, 'event-type': 'item.updated', 'catalog-id': catalogId, 'content-type': 'application/json', 'schema-version': '1',
    });
    assert.deepEqual(JSON.parse(record.value!.toString('utf8')), { catalogId, ...JSON.parse(row.payload) });
    assert.ok(record.value!.toString('utf8').startsWith(`{"catalogId":"${catalogId}","serviceId":`), 'the catalogId first');
  }
  checkKafkaRecord(`${prefix}${TOPICS.items}`, records.find((r) => r.key === itemEventKey(catalogId, 'erp', 'PLAIN'))!);
});
