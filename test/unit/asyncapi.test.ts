// asyncapi.yaml: it parses without errors, covers every topic and event type, and checkKafkaRecord tells good records from bad.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DiagnosticSeverity } from '@asyncapi/parser';
import { asyncApiJson } from '../../platform/http/contract.ts';
import { loadConfig } from '../../platform/config/config.ts';
import { LOGICAL_TOPICS, topicConfigs } from '../../platform/kafka/topics.ts';
import { formatDiagnostic, parseAsyncApi } from '../../scripts/check-asyncapi.ts';
import { checkKafkaRecord } from '../helpers/asyncapi.ts';
import type { KafkaRecordToCheck } from '../helpers/asyncapi.ts';

const parsed = parseAsyncApi();

test('the document parses without errors, its ./openapi.yaml references resolved', async () => {
  const { document, diagnostics } = await parsed;
  assert.deepEqual(diagnostics.filter((d) => d.severity === DiagnosticSeverity.Error).map(formatDiagnostic), []);
  assert.ok(document);
  const created = document.messages().all().find((m) => m.name() === 'item.created');
  assert.ok(created?.payload()?.allOf(), 'item.created payload is the resolved ItemCreatedEvent');
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

test('every event type of EventType (domain/events/outbox.ts) has a message on catalog.events.v1', async () => {
  const { document } = await parsed;
  // The union is types only: read its members from the source, as the contract's enum lists them.
  const source = readFileSync(new URL('../../domain/events/outbox.ts', import.meta.url), 'utf8');
  const union = /export type EventType =([^;]+);/.exec(source)?.[1] ?? '';
  const types = [...union.matchAll(/'([a-z_.]+)'/g)].map((m) => m[1]);
  assert.ok(types.length >= 10, `read ${types.length} event types`);
  const events = document!.channels().all().find((c) => c.address() === '{prefix}catalog.events.v1')!;
  const names = events.messages().all().map((m) => m.name());
  assert.deepEqual(types.filter((type) => !names.includes(type)), []);
});

test('the served document points its OpenAPI references at ./openapi.json', () => {
  const served = asyncApiJson(readFileSync(new URL('../../asyncapi.yaml', import.meta.url), 'utf8'));
  assert.doesNotMatch(served, /openapi\.yaml#/);
  assert.match(served, /"\$ref":"\.\/openapi\.json#\/components\/schemas\/ItemCreatedEvent"/);
});

const CATALOG = '0192f5e0-1a2b-7c3d-8e4f-5a6b7c8d9e0f';
const EVENT_ID = '0192f620-5e6f-7a7b-9c8d-9e0f1a2b3c4d';
const WEBHOOK = '0192f600-3c4d-7e5f-9a6b-7c8d9e0f1a2b';
const webhookTest = {
  id: EVENT_ID, type: 'webhook.test', catalogId: CATALOG, resourceId: WEBHOOK, createdAt: '2026-11-21T12:00:00.123Z',
  data: { webhookId: WEBHOOK, message: 'This is a test event from the Catalog Service.' },
};
const eventRecord = (body: object = webhookTest, key: string | null = WEBHOOK, headers: Record<string, string> = {}): KafkaRecordToCheck => ({
  key,
  value: Buffer.from(JSON.stringify(body)),
  headers: { 'event-id': EVENT_ID, 'event-type': 'webhook.test', 'catalog-id': CATALOG, 'content-type': 'application/json', 'schema-version': '1', ...headers },
});

test('checkKafkaRecord accepts well-formed records, whatever the topic prefix, and tombstones only on the changelog', () => {
  checkKafkaRecord('t.abc.unit.catalog.events.v1', eventRecord());
  checkKafkaRecord('catalog.imports.v1', {
    key: WEBHOOK, value: Buffer.from(JSON.stringify({ jobId: WEBHOOK, catalogId: CATALOG })), headers: { 'event-id': EVENT_ID },
  });
  const itemKey = JSON.stringify([CATALOG, 'erp', 'SKU "1" \\ ✓']);
  const recordHeaders = { 'event-id': EVENT_ID, 'event-type': 'item.deleted', 'catalog-id': CATALOG, 'content-type': 'application/json', 'schema-version': '1' };
  checkKafkaRecord('staging.catalog.items.v1', { key: itemKey, value: null, headers: recordHeaders });
  assert.throws(() => checkKafkaRecord('catalog.items.v1', { key: itemKey, value: null, headers: { 'event-id': EVENT_ID } }), /must have required property 'event-type'/);
  assert.throws(() => checkKafkaRecord('catalog.events.v1', { ...eventRecord(), value: null }), /tombstone/);
});

test('checkKafkaRecord rejects a wrong key, a missing header and a body not matching its schema', () => {
  assert.throws(() => checkKafkaRecord('catalog.events.v1', eventRecord(webhookTest, 'not-a-uuid')), { name: 'AssertionError', message: /key must match format "uuid"/ });
  const { 'catalog-id': _dropped, ...withoutCatalog } = eventRecord().headers;
  assert.throws(() => checkKafkaRecord('catalog.events.v1', { ...eventRecord(), headers: withoutCatalog }), { name: 'AssertionError', message: /headers must have required property 'catalog-id'/ });
  assert.throws(() => checkKafkaRecord('catalog.events.v1', eventRecord({ ...webhookTest, data: { webhookId: WEBHOOK } })), { name: 'AssertionError', message: /value\/data must have required property 'message'/ });
  assert.throws(() => checkKafkaRecord('catalog.events.v1', eventRecord(webhookTest, WEBHOOK, { 'event-type': 'item.moved' })), /no message for event-type "item.moved"/);
  assert.throws(() => checkKafkaRecord('catalog.items.v1', { key: '["x","erp","1"]', value: null, headers: { 'event-id': EVENT_ID } }), /key must match pattern/);
});
