// No tenant can stall publishing: a record the broker refuses for good is parked, logged once and counted, while the events behind it, of its own catalog and of others, go on; the operator sends it again by route or command.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type pg from 'pg';
import * as api from '../../generated/client.ts';
import { domainEvent, eventRow, itemEventKey, writeOutbox } from '../../domain/events/outbox.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { readTopic, setMaxMessageBytes } from '../helpers/kafka.ts';
import { SETTLE_MS, eventually } from '../helpers/media.ts';
import { metricValue } from '../helpers/metrics.ts';
import { cliCommand } from '../helpers/runtime.ts';
import { startTestService, testEnv } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
const run = promisify(execFile);
// Over Kafka's default max.message.bytes (1 MB): the broker refuses such a record whatever the retries.
const OVERSIZED_BYTES = 2_000_000;
let service: TestService;
let sql: pg.Client;
let receiver: Receiver;
let operator: Tenant;

before(async () => {
  receiver = await startReceiver();
  // At error level: the test reads the line a parked record is logged with.
  service = await startTestService(FILE, {
    LOG_LEVEL: 'error', WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_DELAYS_MS: '0,50,50,50,50,50,50,50',
  });
  sql = await sqlClient(service.databaseUrl);
  operator = await service.newTenant({ scopes: ['admin'] });
});

after(async () => {
  await sql?.end();
  await service?.close();
  await receiver?.close();
});

const unsent = async () => (await sql.query('SELECT count(*)::int AS n FROM outbox WHERE sent_at IS NULL')).rows[0].n as number;
const parked = async (query: Parameters<typeof api.listParkedRecords>[0] = {}) =>
  expectData(await api.listParkedRecords(query, clientOptions(service.url, operator.key)), 200).records;
const eventsOnKafka = () => readTopic([...service.kafka.brokers], service.kafka.topic(TOPICS.events));
const cli = (...args: string[]) => run(...cliCommand(['outbox', ...args]), { env: testEnv(FILE, service.databaseUrl) as NodeJS.ProcessEnv })
  .then(({ stdout, stderr }) => ({ code: 0, stdout, stderr }), (error: { code: number; stdout: string; stderr: string }) => error);
// Both topics: an item event carries its changelog record too. Each test puts the default back, so the next one meets it.
const itemTopics = () => [TOPICS.events, TOPICS.items].map((topic) => service.kafka.topic(topic));
const raiseLimit = () => setMaxMessageBytes([...service.kafka.brokers], itemTopics(), 4 * OVERSIZED_BYTES);
const restoreLimit = () => setMaxMessageBytes([...service.kafka.brokers], itemTopics(), undefined);
/** The error-level lines the service logged, from the `from`th on. */
const errorLines = (from = 0) => service.logged().filter((line) => (line.level as number) >= 50).slice(from);

/**
 * An item event of the tenant's too large for the topic, written to the outbox (forced: the
 * payload rules keep real ones far smaller), for an item the API stored.
 */
async function writeOversized(tenant: Tenant, externalId: string) {
  const stored = expectData(await api.upsertItem({ externalSystem: 'erp', externalId, name: 'huge' }, clientOptions(service.url, tenant.key)), 201).item;
  const event = domainEvent({ type: 'item.created', catalogId: tenant.catalogId, resourceId: externalId, data: { ...stored, metadata: { padding: 'x'.repeat(OVERSIZED_BYTES) } } });
  const key = itemEventKey(tenant.catalogId, 'erp', externalId);
  await service.orm.em.fork().transactional((tx) => writeOutbox(tx, [eventRow(event, key)]));
  return { event, key };
}

/** The outbox row holding the event: its lane and its place in it. */
const rowOf = async (eventId: string) =>
  (await sql.query<{ id: string; lane: number }>('SELECT id::text, lane FROM outbox WHERE $1 = ANY(event_ids)', [eventId])).rows[0]!;

test('a record the broker refuses is parked, logged once and counted, while the events behind it in its own lane and another catalog\'s go on; re-sent once the topic takes it', async () => {
  const errorsBefore = errorLines().length;
  const stalled = await service.newTenant();
  const other = await service.newTenant();
  for (const [path, tenant] of [['/stalled', stalled], ['/other', other]] as const) {
    const hook = expectData(await api.createWebhook({ url: receiver.url(path), events: ['item.created'] }, {}, clientOptions(service.url, tenant.key)), 201);
    receiver.secrets(path, [hook.secret]);
  }

  // The oversized record, then an upsert of the same catalog behind it in the same lane, and one of another catalog.
  const { event: huge, key } = await writeOversized(stalled, 'HUGE');
  const same = expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'SAME', name: 'behind it in its lane' }, clientOptions(service.url, stalled.key)), 201);
  const upserted = expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'AFTER', name: 'behind the huge one' }, clientOptions(service.url, other.key)), 201);

  const behind = [['/stalled', 'SAME'], ['/other', 'AFTER']] as const;
  const delivered = await receiver.waitFor('both catalogs\' webhooks', (r) => behind.every(([path, id]) =>
    r.some((x) => x.path === path && x.event.data.externalId === id)), SETTLE_MS);
  for (const [path, id] of behind) {
    assert.ok(delivered.find((x) => x.path === path && x.event.data.externalId === id)!.signedWith.length > 0, `a signature that verifies at ${path}`);
  }
  await eventually(async () => (await unsent()) === 0 || undefined, 'the outbox to drain');
  const events = await eventsOnKafka();
  const sameEvent = events.find((r) => JSON.parse(r.value!.toString()).data?.serviceId === same.serviceId);
  assert.ok(sameEvent, 'the same catalog\'s later event is on Kafka');
  const [hugeRow, sameRow] = [await rowOf(huge.id), await rowOf(sameEvent.headers['event-id']!)];
  assert.equal(sameRow.lane, hugeRow.lane, 'in the refused record\'s lane');
  assert.ok(BigInt(sameRow.id) > BigInt(hugeRow.id), 'behind it');
  assert.ok(events.some((r) => JSON.parse(r.value!.toString()).data?.serviceId === upserted.serviceId), 'the other catalog\'s event is on Kafka');
  assert.ok(!events.some((r) => r.headers['event-id'] === huge.id), 'the refused record is not');

  const [record, ...more] = await parked();
  assert.equal(more.length, 0);
  assert.deepEqual({ ...record, id: undefined, parkedAt: undefined, reason: undefined }, {
    id: undefined, eventId: huge.id, topic: TOPICS.events, key, eventType: 'item.created',
    catalogId: stalled.catalogId, errorType: 'MESSAGE_TOO_LARGE', reason: undefined, byteSize: Buffer.byteLength(JSON.stringify(huge)), parkedAt: undefined, resentAt: null,
  });
  assert.deepEqual((await parked({ catalogId: other.catalogId })).length, 0);
  assert.equal(await metricValue(service.opsUrl, 'catalog_outbox_parked_records'), 1);
  // A key without the operator's scope sees none of it.
  assert.equal((await api.listParkedRecords({}, clientOptions(service.url, stalled.key))).status, 403);
  // One error line tells the operator, with what finds the record again.
  const [logged] = await eventually(async () => (errorLines(errorsBefore).length > 0 ? errorLines(errorsBefore) : undefined), 'the parked record\'s log line');
  assert.match(String(logged!.msg), /the broker refused a record for good; it is parked/);
  assert.deepEqual([logged!.eventId, logged!.catalogId, logged!.errorType, logged!.key], [huge.id, stalled.catalogId, 'MESSAGE_TOO_LARGE', key]);

  // The operator raises the topics' limit, then sends the record again: it is published, and no longer waits.
  await raiseLimit();
  try {
    const resent = expectData(await api.resendParkedRecord(record!.id, clientOptions(service.url, operator.key)), 202);
    assert.ok(resent.resentAt);
    expectStatus(await api.resendParkedRecord(record!.id, clientOptions(service.url, operator.key)), 409);
    expectStatus(await api.resendParkedRecord('0192f700-1a2b-7c3d-8e4f-5a6b7c8d9e0f', clientOptions(service.url, operator.key)), 404);
    await eventually(async () => (await unsent()) === 0 || undefined, 'the re-sent record to be published');
    assert.ok((await eventsOnKafka()).some((r) => r.headers['event-id'] === huge.id), 'the re-sent record is on Kafka');
    assert.deepEqual(await parked(), []);
    assert.equal((await parked({ includeResent: true })).length, 1);
    assert.equal(await metricValue(service.opsUrl, 'catalog_outbox_parked_records'), 0);
    assert.deepEqual(errorLines(errorsBefore), [logged], 'one error line for the parked record, none for its re-sending');

    // The operator's command line says the same.
    const waiting = await cli('parked');
    assert.equal(waiting.code, 0);
    assert.equal(waiting.stdout.trim().split('\n').length, 1, 'only the header: nothing waits');
    const all = await cli('parked', '--all');
    assert.match(all.stdout, new RegExp(`^${record!.id}\t\\S+\tMESSAGE_TOO_LARGE\t${record!.byteSize}\titem\\.created\t${stalled.catalogId}\t${resent.resentAt}`, 'm'));
    const twice = await cli('resend', record!.id);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /was re-sent already/);
  } finally {
    await restoreLimit();
  }
});

test('catalog outbox resend RECORD_ID sends a parked record again, and the relay publishes it once the topic takes it', async () => {
  const tenant = await service.newTenant();
  const errorsBefore = errorLines().length;
  const { event: big } = await writeOversized(tenant, 'BIG');
  const [record] = await eventually(async () => {
    const records = await parked({ catalogId: tenant.catalogId });
    return records.length > 0 ? records : undefined;
  }, 'the record to be parked');
  assert.equal(record!.eventId, big.id);

  await raiseLimit();
  try {
    const resent = await cli('resend', record!.id);
    assert.equal(resent.code, 0, resent.stderr);
    assert.match(resent.stdout, /^Re-sent 1 parked record\(s\)/);
    assert.match(resent.stdout, new RegExp(`^${record!.id}\t\\S+\tMESSAGE_TOO_LARGE\t${record!.byteSize}\titem\\.created\t${tenant.catalogId}\t\\S+\t`, 'm'));
    await eventually(async () => (await unsent()) === 0 || undefined, 'the re-sent record to be published');
    assert.ok((await eventsOnKafka()).some((r) => r.headers['event-id'] === big.id), 'the re-sent record is on Kafka');
    assert.deepEqual(await parked({ catalogId: tenant.catalogId }), []);
    assert.deepEqual(errorLines(errorsBefore).map((line) => line.eventId), [big.id], 'one error line: parked once, taken the second time');
  } finally {
    await restoreLimit();
  }
});
