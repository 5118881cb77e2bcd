// No tenant can stall publishing: a record the broker refuses for good is parked while every other catalog's events and webhooks go on, and media events stay small whatever their image's number of items.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import * as api from '../../generated/client.ts';
import { domainEvent, eventRow, itemEventKey, writeOutbox } from '../../domain/events/outbox.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { silenceKafkajsTimerWarning } from '../../platform/kafka/kafkajs-quirks.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { makeImage } from '../helpers/image-origin.ts';
import { readTopic } from '../helpers/kafka.ts';
import { SETTLE_MS, eventually, settledItem, startMediaBed } from '../helpers/media.ts';
import type { MediaBed } from '../helpers/media.ts';
import { metricValue } from '../helpers/metrics.ts';
import { cliCommand } from '../helpers/runtime.ts';
import { testEnv } from '../helpers/service.ts';
import type { Tenant } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
const run = promisify(execFile);
// Over Kafka's default max.message.bytes (1 MB): the broker refuses such a record whatever the retries.
const OVERSIZED_BYTES = 2_000_000;
const ITEMS_NAMING_ONE_IMAGE = 24_000;
let bed: MediaBed;
let receiver: Receiver;
let operator: Tenant;

before(async () => {
  receiver = await startReceiver();
  bed = await startMediaBed(FILE, { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_RETRY_DELAYS_MS: '0,50,50,50,50,50,50,50' });
  operator = await bed.service.newTenant({ scopes: ['admin'] });
});

after(async () => {
  await bed?.close();
  await receiver?.close();
});

const unsent = async () => (await bed.sql.query('SELECT count(*)::int AS n FROM outbox WHERE sent_at IS NULL')).rows[0].n as number;
const parked = async (query: Parameters<typeof api.listParkedRecords>[0] = {}) =>
  expectData(await api.listParkedRecords(query, clientOptions(bed.service.url, operator.key)), 200).records;

test('a record the broker refuses is parked, logged and counted, while another catalog\'s events and webhooks go on; re-sent once the topic takes it', async () => {
  const stalled = await bed.service.newTenant();
  const other = await bed.service.newTenant();
  const hook = expectData(await api.createWebhook({ url: receiver.url('/other'), events: ['item.created'] }, {}, clientOptions(bed.service.url, other.key)), 201);
  receiver.secrets('/other', [hook.secret]);

  // An item event of the stalled catalog too large for the topic (forced: the payload rules keep
  // real ones far smaller), then the other catalog's upsert behind it.
  const stored = expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'HUGE', name: 'huge' }, clientOptions(bed.service.url, stalled.key)), 201).item;
  const huge = domainEvent({ type: 'item.created', catalogId: stalled.catalogId, resourceId: 'HUGE', data: { ...stored, metadata: { padding: 'x'.repeat(OVERSIZED_BYTES) } } });
  const key = itemEventKey(stalled.catalogId, 'erp', 'HUGE');
  await bed.service.orm.em.fork().transactional((tx) => writeOutbox(tx, [eventRow(huge, key)]));
  const upserted = expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'AFTER', name: 'behind the huge one' }, clientOptions(bed.service.url, other.key)), 201);

  const delivered = await receiver.waitFor('the other catalog\'s webhook', (r) => r.some((x) => x.path === '/other' && x.event.data.externalId === 'AFTER'), SETTLE_MS);
  assert.ok(delivered.find((x) => x.path === '/other')!.signedWith.length > 0, 'a signature that verifies');
  await eventually(async () => (await unsent()) === 0 || undefined, 'the outbox to drain');
  const events = await readTopic([...bed.service.kafka.brokers], bed.service.kafka.topic(TOPICS.events));
  assert.ok(events.some((r) => r.headers['event-id'] && JSON.parse(r.value!.toString()).data?.serviceId === upserted.serviceId), 'the other catalog\'s event is on Kafka');
  assert.ok(!events.some((r) => r.headers['event-id'] === huge.id), 'the refused record is not');

  const [record, ...more] = await parked();
  assert.equal(more.length, 0);
  assert.deepEqual({ ...record, id: undefined, parkedAt: undefined, reason: undefined }, {
    id: undefined, eventId: huge.id, topic: TOPICS.events, key, eventType: 'item.created',
    catalogId: stalled.catalogId, errorType: 'MESSAGE_TOO_LARGE', reason: undefined, byteSize: Buffer.byteLength(JSON.stringify(huge)), parkedAt: undefined, resentAt: null,
  });
  assert.deepEqual((await parked({ catalogId: other.catalogId })).length, 0);
  assert.equal(await metricValue(bed.service.opsUrl, 'catalog_outbox_parked_records'), 1);
  // A key without the operator's scope sees none of it.
  assert.equal((await api.listParkedRecords({}, clientOptions(bed.service.url, stalled.key))).status, 403);

  // The operator raises the topics' limit (an item event carries its changelog record too), then
  // sends the record again: it is published, and no longer waits.
  silenceKafkajsTimerWarning();
  const admin = new Kafka({ clientId: 'test-parking', brokers: [...bed.service.kafka.brokers], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.alterConfigs({ validateOnly: false, resources: [TOPICS.events, TOPICS.items].map((topic) => ({
      type: 2, name: bed.service.kafka.topic(topic), configEntries: [{ name: 'max.message.bytes', value: String(4 * OVERSIZED_BYTES) }],
    })) });
  } finally {
    await admin.disconnect();
  }
  const resent = expectData(await api.resendParkedRecord(record!.id, clientOptions(bed.service.url, operator.key)), 202);
  assert.ok(resent.resentAt);
  expectStatus(await api.resendParkedRecord(record!.id, clientOptions(bed.service.url, operator.key)), 409);
  expectStatus(await api.resendParkedRecord('0192f700-1a2b-7c3d-8e4f-5a6b7c8d9e0f', clientOptions(bed.service.url, operator.key)), 404);
  await eventually(async () => (await unsent()) === 0 || undefined, 'the re-sent record to be published');
  const again = await readTopic([...bed.service.kafka.brokers], bed.service.kafka.topic(TOPICS.events));
  assert.ok(again.some((r) => r.headers['event-id'] === huge.id), 'the re-sent record is on Kafka');
  assert.deepEqual(await parked(), []);
  assert.equal((await parked({ includeResent: true })).length, 1);
  assert.equal(await metricValue(bed.service.opsUrl, 'catalog_outbox_parked_records'), 0);

  // The operator's command line says the same.
  const cli = (...args: string[]) => run(...cliCommand(['outbox', ...args]), { env: testEnv(FILE, bed.service.databaseUrl) as NodeJS.ProcessEnv })
    .then(({ stdout }) => ({ code: 0, stdout, stderr: '' }), (error: { code: number; stdout: string; stderr: string }) => error);
  const waiting = await cli('parked');
  assert.equal(waiting.code, 0);
  assert.equal(waiting.stdout.trim().split('\n').length, 1, 'only the header: nothing waits');
  const all = await cli('parked', '--all');
  assert.match(all.stdout, new RegExp(`^${record!.id}\t\\S+\tMESSAGE_TOO_LARGE\t${record!.byteSize}\titem\\.created\t${stalled.catalogId}\t${resent.resentAt}`, 'm'));
  const twice = await cli('resend', record!.id);
  assert.equal(twice.code, 1);
  assert.match(twice.stderr, /was re-sent already/);
});

test(`an image named by ${ITEMS_NAMING_ONE_IMAGE} items: its media events list the first 100 and count them all; nothing is parked and every item's record is published`, async () => {
  const opts = clientOptions(bed.service.url, bed.tenant.key);
  bed.origin.serve('/shared.png', { body: await makeImage('png', 40, 40, 1), etag: '"v1"' });
  const media = [{ url: bed.origin.at('/shared.png'), role: 'primary' as const, sortOrder: 0 }];
  for (let from = 0; from < ITEMS_NAMING_ONE_IMAGE; from += 1000) {
    const items = Array.from({ length: 1000 }, (_, k) => ({ externalSystem: 'erp', externalId: `M-${String(from + k).padStart(5, '0')}`, name: 'Mug', media }));
    assert.equal(expectData(await api.bulkUpsertItems({ items }, opts), 200).summary.created, 1000);
  }
  const first = await settledItem(bed.service.url, bed.tenant.key, 'M-00000');
  assert.equal(first.media[0]!.status, 'ingested');
  // New bytes at the same address: the refresh reports every item again.
  bed.origin.serve('/shared.png', { body: await makeImage('png', 40, 40, 2), etag: '"v2"' });
  const assetId = first.media[0]!.assetId!;
  expectStatus(await api.refreshMediaAsset(assetId, opts), 202);
  const sourceUrlHash = first.media[0]!.sourceUrlHash;
  const ingested = await eventually(async () => {
    const { rows } = await bed.sql.query(`SELECT payload FROM outbox_events WHERE topic = 'catalog.events.v1' AND type = 'media.ingested'
      AND payload::jsonb ->> 'catalogId' = $1 ORDER BY batch_id, ord`, [bed.tenant.catalogId]);
    return rows.length >= 2 ? JSON.parse(rows.at(-1)!.payload) : undefined;
  }, 'the refresh\'s media.ingested', 2 * SETTLE_MS);
  assert.equal(ingested.data.itemCount, ITEMS_NAMING_ONE_IMAGE);
  assert.deepEqual(ingested.data.items, Array.from({ length: 100 }, (_, k) => ({ externalSystem: 'erp', externalId: `M-${String(k).padStart(5, '0')}` })));
  assert.ok(Buffer.byteLength(JSON.stringify(ingested)) < 100_000);

  await eventually(async () => (await unsent()) === 0 || undefined, 'the outbox to drain', 2 * SETTLE_MS);
  assert.deepEqual(await parked({ catalogId: bed.tenant.catalogId }), []);
  const records = await readTopic([...bed.service.kafka.brokers], bed.service.kafka.topic(TOPICS.items), 2 * SETTLE_MS);
  const recordedAfterRefresh = records.filter((r) => r.headers['event-id'] === ingested.id);
  assert.equal(recordedAfterRefresh.length, ITEMS_NAMING_ONE_IMAGE, 'one changelog record per item, with the event\'s id');

  // The API pages through every item naming the image.
  let listed = 0;
  let cursor: string | undefined;
  do {
    const page = expectData(await api.listItems({ sourceUrlHash, limit: 200, ...(cursor ? { cursor } : {}) }, opts), 200);
    listed += page.items.length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  assert.equal(listed, ITEMS_NAMING_ONE_IMAGE);
});
