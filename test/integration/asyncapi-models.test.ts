// The TypeScript models Modelina makes of asyncapi.yaml, as a downstream team would: every one named, each event's data typed for it, compiled in strict mode; and checkKafkaRecord judging records by the document and by those models.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { asyncApiModels } from '../helpers/asyncapi-models.ts';
import { checkKafkaRecord } from '../helpers/asyncapi.ts';
import type { KafkaRecordToCheck } from '../helpers/asyncapi.ts';

test('Modelina names every model, payloads and headers alike, and the models compile with the project\'s strict, erasable-only settings', () => {
  // asyncApiModels() makes them with test/generators/modelina/generate.ts and compiles them with
  // the project's tsc and tsconfig (strict, erasableSyntaxOnly): it throws on any type error.
  const models = asyncApiModels();
  assert.deepEqual(models.models.filter((name) => /^AnonymousSchema/.test(name)), []);
  const source = readFileSync(join(models.dir, 'models.ts'), 'utf8');
  assert.doesNotMatch(source, /^export enum /m, 'enums as unions, which Node runs');
  for (const [address, messages] of Object.entries(models.channels)) {
    for (const message of messages) {
      assert.ok(message.payload && models.models.includes(message.payload), `${address} ${message.name}: a named payload model`);
      assert.ok(message.headers && models.models.includes(message.headers), `${address} ${message.name}: a named headers model`);
    }
  }
  assert.deepEqual(Object.keys(models.channels).sort(), ['{prefix}catalog.events.v1', '{prefix}catalog.imports.v1', '{prefix}catalog.items.v1',
    '{prefix}catalog.media.v1', '{prefix}catalog.webhook-deliveries.v1']);
});

test('each event published on Kafka has a payload model of its own, with its type and its data; webhook.test is not among them', () => {
  const models = asyncApiModels();
  const data: Record<string, string> = {
    'item.created': 'Item', 'item.updated': 'ItemUpdatedData', 'item.deleted': 'Item', 'stock.adjusted': 'StockAdjustedData',
    'media.ingested': 'MediaIngestedData', 'media.ingestion_failed': 'MediaIngestionFailedData',
    'import.completed': 'ImportCompletedData', 'import.failed': 'ImportFailedData',
  };
  const events = models.channels['{prefix}catalog.events.v1']!;
  assert.deepEqual(events.map((message) => message.name).sort(), Object.keys(data).sort());
  assert.equal(new Set(events.map((message) => message.payload)).size, events.length, 'one payload model per event');
  for (const message of events) {
    const schema = models.schemas[message.payload!] as { properties: Record<string, { const?: string; $ref?: string }> };
    assert.equal(schema.properties.type?.const, message.name, `${message.payload}.type`);
    assert.equal(schema.properties.data?.$ref, `#/definitions/${data[message.name]}`, `${message.payload}.data`);
  }
  const items = models.channels['{prefix}catalog.items.v1']!;
  assert.deepEqual(items.map((message) => [message.name, message.payload, message.headers]),
    [['item', 'ItemRecord', 'ItemRecordHeaders'], ['item.tombstone', 'ItemTombstone', 'ItemRecordHeaders']]);
});

const CATALOG = '0192f5e0-1a2b-7c3d-8e4f-5a6b7c8d9e0f';
const EVENT_ID = '0192f620-5e6f-7a7b-9c8d-9e0f1a2b3c4d';
const JOB = '0192f600-3c4d-7e5f-9a6b-7c8d9e0f1a2b';
const completed = {
  id: EVENT_ID, type: 'import.completed', catalogId: CATALOG, resourceId: JOB, createdAt: '2026-11-21T12:00:00.123Z',
  data: { jobId: JOB, status: 'completed', counts: { total: 2, processed: 2, succeeded: 2, failed: 0, unchanged: 0 }, errorCount: 0, dryRun: false },
};
const eventRecord = (body: object = completed, key: string | null = JOB, headers: Record<string, string> = {}): KafkaRecordToCheck => ({
  key,
  value: Buffer.from(JSON.stringify(body)),
  headers: { 'event-id': EVENT_ID, 'event-type': 'import.completed', 'catalog-id': CATALOG, 'content-type': 'application/json', 'schema-version': '1', ...headers },
});

test('checkKafkaRecord accepts well-formed records, whatever the topic prefix, and tombstones only on the changelog', () => {
  checkKafkaRecord('t.abc.unit.catalog.events.v1', eventRecord());
  checkKafkaRecord('catalog.imports.v1', {
    key: JOB, value: Buffer.from(JSON.stringify({ jobId: JOB, catalogId: CATALOG })), headers: { 'event-id': EVENT_ID },
  });
  const itemKey = JSON.stringify([CATALOG, 'erp', 'SKU "1" \\ ✓']);
  const recordHeaders = { 'event-id': EVENT_ID, 'event-type': 'item.deleted', 'catalog-id': CATALOG, 'content-type': 'application/json', 'schema-version': '1' };
  checkKafkaRecord('staging.catalog.items.v1', { key: itemKey, value: null, headers: recordHeaders });
  assert.throws(() => checkKafkaRecord('catalog.items.v1', { key: itemKey, value: null, headers: { 'event-id': EVENT_ID } }), /must have required property 'event-type'/);
  assert.throws(() => checkKafkaRecord('catalog.events.v1', { ...eventRecord(), value: null }), /tombstone/);
});

test('checkKafkaRecord rejects a wrong key, a missing header, a body not matching its schema, and a field the models do not know', () => {
  assert.throws(() => checkKafkaRecord('catalog.events.v1', eventRecord(completed, 'not-a-uuid')), { name: 'AssertionError', message: /key must match format "uuid"/ });
  const { 'catalog-id': _dropped, ...withoutCatalog } = eventRecord().headers;
  assert.throws(() => checkKafkaRecord('catalog.events.v1', { ...eventRecord(), headers: withoutCatalog }), { name: 'AssertionError', message: /headers must have required property 'catalog-id'/ });
  assert.throws(() => checkKafkaRecord('catalog.events.v1', eventRecord({ ...completed, data: { jobId: JOB } })), { name: 'AssertionError', message: /value\/data must have required property 'status'/ });
  assert.throws(() => checkKafkaRecord('catalog.events.v1', eventRecord(completed, JOB, { 'event-type': 'webhook.test' })), /no message for event-type "webhook.test"/);
  assert.throws(() => checkKafkaRecord('catalog.items.v1', { key: '["x","erp","1"]', value: null, headers: { 'event-id': EVENT_ID } }), /key must match pattern/);
  // The contract lets fields be added (readers ignore them); the models must still know every field the service sends.
  assert.throws(() => checkKafkaRecord('catalog.events.v1', eventRecord({ ...completed, data: { ...completed.data, startedBy: 'ops' } })),
    { name: 'AssertionError', message: /as the model ImportCompletedEvent\/data must NOT have additional properties \(startedBy\)/ });
});
