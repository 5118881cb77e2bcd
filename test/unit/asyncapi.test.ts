// asyncapi.yaml: it parses without errors, names every message's schemas, lists every topic and the events published on Kafka, and is served with the deployment's brokers and topics.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DiagnosticSeverity } from '@asyncapi/parser';
import { parse } from 'yaml';
import { loadConfig } from '../../platform/config/config.ts';
import { servedAsyncApi } from '../../platform/http/served-asyncapi.ts';
import { LOGICAL_TOPICS, topicConfigs } from '../../platform/kafka/topics.ts';
import { formatDiagnostic, parseAsyncApi } from '../../scripts/check-asyncapi.ts';

const parsed = parseAsyncApi();

test('the document parses without errors, its ./openapi.yaml references resolved', async () => {
  const { document, diagnostics } = await parsed;
  assert.deepEqual(diagnostics.filter((d) => d.severity === DiagnosticSeverity.Error).map(formatDiagnostic), []);
  assert.ok(document);
  const created = document.messages().all().find((m) => m.name() === 'item.created');
  assert.equal(created?.payload()?.title(), 'ItemCreatedEvent', 'the payload is the resolved ItemCreatedEvent');
  assert.equal(created?.payload()?.properties()?.data?.title(), 'Item');
});

test('every message\'s payload and headers are named schemas, which model generators name their types after', async () => {
  const { document } = await parsed;
  const unnamed = document!.messages().all().flatMap((message) => [
    ...(message.payload()?.title() ? [] : [`${message.name()} payload`]), ...(message.headers()?.title() ? [] : [`${message.name()} headers`]),
  ]);
  assert.deepEqual(unnamed, []);
});

test('every topic of the service has a channel, declaring the partitions and configuration the service gives it by default', async () => {
  const { document } = await parsed;
  const config = loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'catalog-asyncapi-')) });
  const configs = topicConfigs(config);
  const channels = document!.channels().all();
  for (const topic of LOGICAL_TOPICS) {
    const channel = channels.find((c) => c.address() === `{prefix}${topic}`);
    assert.ok(channel, `no channel for ${topic}`);
    const kafka = channel.bindings().get('kafka')?.value() as { partitions: number; topicConfiguration: Record<string, unknown> };
    assert.equal(kafka.partitions, config.kafkaTopics.partitions, topic);
    // The binding writes cleanup.policy as a list and durations as numbers; Kafka takes strings.
    const declared = Object.fromEntries(Object.entries(kafka.topicConfiguration).map(([name, value]) => [name, String(value)]));
    assert.deepEqual(declared, configs[topic], topic);
  }
});

test('catalog.events.v1 lists exactly the event types published on Kafka: every EventType but webhook.test and the reserved variant.*', async () => {
  const { document } = await parsed;
  // The union is types only: read its members from the source, as the contract's enum lists them.
  const source = readFileSync(new URL('../../domain/events/envelope.ts', import.meta.url), 'utf8');
  const union = /export type EventType =([^;]+);/.exec(source)?.[1] ?? '';
  const types = [...union.matchAll(/'([a-z_.]+)'/g)].map((m) => m[1]!);
  assert.ok(types.length >= 10, `read ${types.length} event types`);
  const published = types.filter((type) => type !== 'webhook.test' && !type.startsWith('variant.'));
  const events = document!.channels().all().find((c) => c.address() === '{prefix}catalog.events.v1')!;
  assert.deepEqual(events.messages().all().map((m) => m.name()).sort(), published.sort());
});

test('the served document names the deployment\'s brokers, topics and topic configuration, and points at ./openapi.json', () => {
  const config = loadConfig({
    DATA_DIR: mkdtempSync(join(tmpdir(), 'catalog-asyncapi-')), KAFKA_BROKERS: 'kafka:9092', KAFKA_PUBLIC_BROKERS: 'b1.example.com:9094,b2.example.com:9094',
    KAFKA_TOPIC_PREFIX: 'staging.', KAFKA_PARTITIONS: '24', KAFKA_REPLICATION_FACTOR: '3', EVENT_RETENTION_DAYS: '10',
  });
  const text = servedAsyncApi(parse(readFileSync(new URL('../../asyncapi.yaml', import.meta.url), 'utf8')) as object, config);
  assert.doesNotMatch(text, /openapi\.yaml#|"address":"\{prefix\}/);
  assert.match(text, /"\$ref":"\.\/openapi\.json#\/components\/schemas\/ItemCreatedEvent"/);
  const served = JSON.parse(text) as { info: { description: string }; servers: Record<string, { host: string; protocol: string }>; channels: Record<string, { address: string; parameters?: unknown; bindings: { kafka: Record<string, unknown> } }> };
  assert.deepEqual(Object.values(served.servers).map((server) => `${server.protocol}://${server.host}`), ['kafka://b1.example.com:9094', 'kafka://b2.example.com:9094']);
  assert.deepEqual(Object.values(served.channels).map((channel) => channel.address).sort(), LOGICAL_TOPICS.map((topic) => `staging.${topic}`).sort());
  assert.match(served.info.description, /^This copy describes the deployment that served it: .*`staging\.`/);
  const events = served.channels.events!;
  assert.equal(events.parameters, undefined);
  assert.deepEqual(events.bindings.kafka, {
    partitions: 24, replicas: 3, bindingVersion: '0.5.0',
    topicConfiguration: { 'cleanup.policy': ['delete'], 'retention.ms': 10 * 24 * 3600_000, 'message.timestamp.type': 'CreateTime' },
  });
});
