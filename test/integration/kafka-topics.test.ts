// The service's topics as a reader's admin client sees them: created with the configured partitions and the configuration asyncapi.yaml declares, existing ones reconciled at start, and the served document naming them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import kafkajs from 'kafkajs';
import type { Admin } from 'kafkajs';
import { parse } from 'yaml';
import { silenceKafkajsTimerWarning } from '../../platform/kafka/kafkajs-quirks.ts';
import { sharedBrokers, topicPrefixFor } from '../helpers/kafka.ts';
import { startTestService } from '../helpers/service.ts';
import type { TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const { ConfigResourceTypes, Kafka, logLevel } = kafkajs;
const DAY_MS = 24 * 3600_000;
// Where readers would reach the brokers, were they behind a proxy: only the served document says it.
const PUBLIC_BROKERS = ['kafka-1.catalog.example.com:9094', 'kafka-2.catalog.example.com:9094'];

let service: TestService;
let admin: Admin;

/** Each channel's topic configuration as asyncapi.yaml declares it, in Kafka's string values. */
function declaredConfigs(): Map<string, Record<string, string>> {
  const document = parse(readFileSync(new URL('../../asyncapi.yaml', import.meta.url), 'utf8')) as {
    channels: Record<string, { address: string; bindings: { kafka: { topicConfiguration: Record<string, unknown> } } }>;
  };
  return new Map(Object.values(document.channels).map((channel) => [
    channel.address.replace('{prefix}', ''),
    Object.fromEntries(Object.entries(channel.bindings.kafka.topicConfiguration).map(([name, value]) => [name, String(value)])),
  ]));
}

async function partitionsOf(topic: string): Promise<number> {
  const metadata = await admin.fetchTopicMetadata({ topics: [service.kafka.topic(topic)] });
  return metadata.topics[0]!.partitions.length;
}

/** The topic's configuration entries named in `names`, as describeConfigs answers them. */
async function configOf(topic: string, names: readonly string[]): Promise<Record<string, string>> {
  const described = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: service.kafka.topic(topic) }] });
  const entries = described.resources[0]!.configEntries.filter((entry) => names.includes(entry.configName));
  return Object.fromEntries(entries.map((entry) => [entry.configName, entry.configValue]));
}

before(async () => {
  silenceKafkajsTimerWarning();
  admin = new Kafka({ clientId: 'test-kafka-topics', brokers: await sharedBrokers(), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  // Two topics exist before the service first starts, as an operator or an older version left
  // them: the events topic with 2 partitions, a week's retention and an override of its own,
  // the changelog with 16 partitions and the wrong cleanup policy.
  const prefix = topicPrefixFor(FILE);
  await admin.createTopics({
    topics: [
      { topic: `${prefix}catalog.events.v1`, numPartitions: 2, configEntries: [{ name: 'retention.ms', value: String(7 * DAY_MS) }, { name: 'max.message.bytes', value: '2000000' }] },
      { topic: `${prefix}catalog.items.v1`, numPartitions: 16, configEntries: [{ name: 'cleanup.policy', value: 'delete' }] },
    ],
  });
  // KAFKA_PARTITIONS empty: the default, whatever the environment says.
  service = await startTestService(FILE, { KAFKA_PARTITIONS: '', KAFKA_PUBLIC_BROKERS: PUBLIC_BROKERS.join(',') });
});

after(async () => {
  await service?.close();
  await admin?.disconnect();
});

test('a missing topic is created with KAFKA_PARTITIONS partitions, 12 by default, and the configuration asyncapi.yaml declares', async () => {
  assert.equal(service.config.kafkaTopics.partitions, 12);
  const declared = declaredConfigs();
  for (const topic of ['catalog.imports.v1', 'catalog.media.v1', 'catalog.webhook-deliveries.v1']) {
    assert.equal(await partitionsOf(topic), 12, topic);
    assert.deepEqual(await configOf(topic, Object.keys(declared.get(topic)!)), declared.get(topic), topic);
  }
});

test('an existing topic keeps its partitions, fewer or more, and the overrides of others; its declared configuration is set at start', async () => {
  const declared = declaredConfigs();
  assert.equal(await partitionsOf('catalog.events.v1'), 2, 'never raised: keys would move to other partitions');
  assert.equal(await partitionsOf('catalog.items.v1'), 16, 'never lowered');
  const events = declared.get('catalog.events.v1')!;
  assert.equal(events['retention.ms'], String(30 * DAY_MS), 'GET /events keeps events 30 days by default; so does the topic');
  assert.deepEqual(await configOf('catalog.events.v1', [...Object.keys(events), 'max.message.bytes']), { ...events, 'max.message.bytes': '2000000' });
  const items = declared.get('catalog.items.v1')!;
  assert.deepEqual(items, {
    'cleanup.policy': 'compact', 'delete.retention.ms': String(7 * DAY_MS), 'min.compaction.lag.ms': String(DAY_MS), 'message.timestamp.type': 'CreateTime',
  });
  assert.deepEqual(await configOf('catalog.items.v1', Object.keys(items)), items);
});

test('GET /asyncapi.json names the brokers readers reach, the real topic names, and the partitions and configuration the topics have', async () => {
  const answer = await fetch(`${service.url}/api/v1/catalog/asyncapi.json`);
  assert.equal(answer.status, 200);
  const served = await answer.json() as {
    servers: Record<string, { host: string; protocol: string }>;
    channels: Record<string, { address: string; bindings?: { kafka: { partitions: number; topicConfiguration: Record<string, unknown> } } }>;
  };
  assert.deepEqual(Object.values(served.servers).map((server) => [server.protocol, server.host]), PUBLIC_BROKERS.map((host) => ['kafka', host]));
  const declared = declaredConfigs();
  for (const channel of Object.values(served.channels)) {
    const topic = [...declared.keys()].find((name) => channel.address === service.kafka.topic(name));
    assert.ok(topic, `${channel.address} is one of the service's topics, prefix and all`);
    const { partitions, topicConfiguration } = channel.bindings!.kafka;
    const configuration = Object.fromEntries(Object.entries(topicConfiguration).map(([name, value]) => [name, String(value)]));
    assert.deepEqual(await configOf(topic, Object.keys(configuration)), configuration, `${topic} is configured as served`);
    if (topic !== 'catalog.events.v1' && topic !== 'catalog.items.v1') assert.equal(partitions, await partitionsOf(topic), `${topic} partitions`);
  }
});

test('another instance started with other retentions brings the topics to them', async () => {
  const other = await startTestService(FILE, {
    DATABASE_URL: service.databaseUrl, KAFKA_PARTITIONS: '', EVENT_RETENTION_DAYS: '10', CHANGELOG_TOMBSTONE_RETENTION_DAYS: '9', CHANGELOG_MIN_COMPACTION_LAG_HOURS: '2',
  });
  try {
    assert.deepEqual(await configOf('catalog.events.v1', ['retention.ms', 'max.message.bytes']), { 'retention.ms': String(10 * DAY_MS), 'max.message.bytes': '2000000' });
    assert.deepEqual(await configOf('catalog.items.v1', ['delete.retention.ms', 'min.compaction.lag.ms', 'cleanup.policy']),
      { 'delete.retention.ms': String(9 * DAY_MS), 'min.compaction.lag.ms': String(2 * 3600_000), 'cleanup.policy': 'compact' });
  } finally {
    await other.close();
  }
});
