// The outbox relay on a three-broker cluster (replication factor 3, min.insync.replicas 2) whose leaders stop, die and come back under load: every record marked sent is on its topic.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { createOutboxRelay } from '../../consumers/relay/outbox-relay.ts';
import type { OutboxRelay } from '../../consumers/relay/outbox-relay.ts';
import { domainEvent, eventRow, itemEventKey, writeOutbox } from '../../domain/events/outbox.ts';
import type { OutboxRow } from '../../domain/events/outbox.ts';
import { loadConfig } from '../../platform/config/config.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { createKafkaClient } from '../../platform/kafka/client.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import { brokersAnswer } from '../../platform/kafka/probe.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { freshDatabase, sqlClient } from '../helpers/database.ts';
import { privateCluster, readTopic, topicPrefixFor } from '../helpers/kafka.ts';

const cluster = privateCluster('kafka-test-cluster-relay', 3);
const prefix = topicPrefixFor(import.meta.url);
const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn');
// Writes spread over catalogs (so over the relay's lanes, sent side by side) and items (so over every partition).
const CATALOGS = ['0192f5f0-2b3c-7d4e-8f5a-6b7c8d9e0f1a', '0192f5f0-2b3c-7d4e-8f5a-6b7c8d9e0f1b', '0192f5f0-2b3c-7d4e-8f5a-6b7c8d9e0f1c', '0192f5f0-2b3c-7d4e-8f5a-6b7c8d9e0f1d'];
const TRANSACTIONS = 160;
const EVENTS_PER_TRANSACTION = 40;
// Bounded waits: past the relay's longest backoff and a broker's restart on a busy 2-core machine.
const WAIT_MS = 180_000;

let databaseUrl: string;
let db: pg.Client;
let orm: Orm;
let kafka: KafkaClient;
let relay: OutboxRelay;
let brokers: string[];

function itemEvent(catalogId: string, externalId: string) {
  const now = new Date().toISOString();
  return domainEvent({
    type: 'item.created', catalogId, resourceId: externalId, data: {
      serviceId: '0192f5e4-7b3a-7c1d-9e2f-3a4b5c6d7e8f', externalSystem: 'erp', externalId, sku: `SKU-${externalId}`, name: `Item ${externalId}`,
      description: null, price: 10.5, cost: null, weight: null, gtin13: null, ncm: null, category: null, brand: null, tags: [], metadata: {},
      trackStock: false, onHand: 0, media: [], contentHash: 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb', createdAt: now, updatedAt: now,
    },
  });
}

/** Writes the run's events, TRANSACTIONS commits of EVENTS_PER_TRANSACTION each, as fast as Postgres takes them; returns their rows. */
async function writeLoad(run: string): Promise<OutboxRow[]> {
  const written: OutboxRow[] = [];
  for (let t = 0; t < TRANSACTIONS; t++) {
    const catalogId = CATALOGS[t % CATALOGS.length]!;
    const rows = Array.from({ length: EVENTS_PER_TRANSACTION }, (_, i) => {
      const externalId = `${run}-${t}-${i}`;
      return eventRow(itemEvent(catalogId, externalId), itemEventKey(catalogId, 'erp', externalId));
    });
    await orm.em.fork().transactional((em) => writeOutbox(em, rows));
    written.push(...rows);
  }
  return written;
}

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<number> {
  const began = Date.now();
  while (!(await check())) {
    if (Date.now() - began > WAIT_MS) throw new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 200));
  }
  return Date.now() - began;
}

const unsentCount = async (): Promise<number> => Number((await db.query('SELECT count(*) AS n FROM outbox_events WHERE sent_at IS NULL')).rows[0].n);

/** The broker leading the most partitions of the events topic. */
async function busiestLeader(): Promise<number> {
  const leaders = await cluster.leaderOf(kafka.topic(TOPICS.events));
  const counts = new Map<number, number>();
  for (const leader of leaders.values()) counts.set(leader, (counts.get(leader) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]![0];
}

/**
 * Every written event is on the events topic and has its changelog record, whatever was sent
 * twice; returns the duplicates. Records of earlier cases on the same topics are passed over.
 */
async function assertAllPublished(rows: OutboxRow[]): Promise<{ events: number; changelog: number }> {
  const ids = new Set(rows.map((row) => row.eventId));
  const copies = async (logical: string) => {
    const count = new Map<string, number>();
    for (const record of await readTopic(brokers, kafka.topic(logical), WAIT_MS)) {
      const id = record.headers['event-id'] ?? '';
      if (ids.has(id)) count.set(id, (count.get(id) ?? 0) + 1);
    }
    return count;
  };
  const duplicates = { events: 0, changelog: 0 };
  for (const [logical, kind] of [[TOPICS.events, 'events'], [TOPICS.items, 'changelog']] as const) {
    const count = await copies(logical);
    const missing = rows.filter((row) => !count.has(row.eventId));
    assert.deepEqual(missing.map((row) => row.eventId), [], `${missing.length} of ${rows.length} records marked sent are missing from ${logical}`);
    duplicates[kind] = [...count.values()].reduce((n, c) => n + c - 1, 0);
  }
  return duplicates;
}

/** Runs the load, does `fault` once a quarter of it is published, then `heal`; asserts nothing marked sent is missing. */
async function underLoad(run: string, fault: () => Promise<void>, heal: () => Promise<void>): Promise<void> {
  const publishedBefore = relay.stats.published;
  const resentBefore = relay.stats.resent;
  const load = writeLoad(run);
  await waitUntil('a quarter of the load to be published',
    async () => relay.stats.published - publishedBefore >= (TRANSACTIONS * EVENTS_PER_TRANSACTION) / 4);
  const faultAt = Date.now();
  await fault();
  const rows = await load;
  await heal();
  const drainMs = await waitUntil('the outbox to drain', async () => (await unsentCount()) === 0);
  const duplicates = await assertAllPublished(rows);
  process.stdout.write(`# ${run}: ${rows.length} events and their changelog records all on their topics; `
    + `sent again after an incomplete answer: ${relay.stats.resent - resentBefore}; duplicates: ${duplicates.events} events, ${duplicates.changelog} changelog records; `
    + `drained ${Math.round((Date.now() - faultAt) / 100) / 10} s after the fault (${Math.round(drainMs / 100) / 10} s after the heal)\n`);
}

before(async () => {
  databaseUrl = await freshDatabase(import.meta.url);
  orm = await openDatabase({ databaseUrl, logger });
  db = await sqlClient(databaseUrl);
  brokers = await cluster.start();
  const config = loadConfig({ ...process.env, KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: prefix, LOG_LEVEL: 'warn' });
  kafka = await createKafkaClient(config, logger, { clientId: 'test-cluster-relay' });
  await kafka.ensureTopics();
  relay = createOutboxRelay({ orm, databaseUrl, kafka, logger, maxBackoffMs: 2000 });
  await relay.start();
});

/** Pids of the Kafka nodes whose command line names the folder (their properties file lives in it). */
function nodeProcessesOf(folder: string): number[] {
  return readdirSync('/proc').filter((name) => /^\d+$/.test(name)).flatMap((pid) => {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      return cmdline.includes('kafka.Kafka') && cmdline.includes(`${folder}/`) ? [Number(pid)] : [];
    } catch {
      return []; // gone meanwhile
    }
  });
}

after(async () => {
  await relay?.stop();
  await kafka?.disconnect();
  await orm?.close();
  await db?.end();
  await cluster.remove();
  assert.deepEqual(nodeProcessesOf(cluster.dataDir), [], 'no Kafka node of the cluster\'s folder is left running');
});

describe('outbox relay on a three-broker cluster', () => {
  test('the topics are replicated three times, and the cluster takes writes', async () => {
    const metadata = await kafka.withAdmin((admin) => admin.fetchTopicMetadata({ topics: [kafka.topic(TOPICS.events)] }));
    for (const partition of metadata.topics[0]!.partitions) assert.equal(partition.replicas.length, 3);
    assert.equal(await kafka.ping(), true);
  });

  test('the leader of the busiest partitions restarted (controlled shutdown) mid-publish: every record marked sent is on its topic', async () => {
    let leader = -1;
    await underLoad('restart', async () => {
      leader = await busiestLeader();
      await cluster.stop(leader);
    }, () => cluster.restart(leader));
  });

  test('the leader of the busiest partitions killed (-9) mid-publish: every record marked sent is on its topic', async () => {
    let leader = -1;
    await underLoad('kill', async () => {
      leader = await busiestLeader();
      await cluster.kill(leader);
    }, () => cluster.restart(leader));
  });

  test('readiness asks the cluster: the first address down is fine; two of three brokers down is not, and the outbox holds until one is back', async () => {
    await cluster.stop(1);
    assert.equal(await brokersAnswer(brokers), true, 'the other addresses answer');
    await waitUntil('the cluster to take writes without its first broker', () => kafka.ping());
    await cluster.stop(2);
    await waitUntil('readiness to see that nothing can be published', async () => !(await kafka.ping()));
    const rows = await writeLoad('two-down');
    assert.ok((await unsentCount()) > 0, 'records wait in the outbox');
    await cluster.restart(2);
    await waitUntil('readiness to see the cluster take writes again', () => kafka.ping());
    const drainMs = await waitUntil('the outbox to drain', async () => (await unsentCount()) === 0);
    await cluster.restart(1);
    const duplicates = await assertAllPublished(rows);
    process.stdout.write(`# two-down: ${rows.length} events waited and were published ${Math.round(drainMs / 100) / 10} s after the second broker's return; duplicates: ${duplicates.events}\n`);
  });
});
