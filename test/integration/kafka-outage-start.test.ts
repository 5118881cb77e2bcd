// A service started while Kafka is away: it serves and says it is ready (Postgres answers), keeps events in the outbox, and starts its Kafka work when the broker comes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { checkedFetch } from '../helpers/contract-check.ts';
import { privateBroker, readTopic } from '../helpers/kafka.ts';
import { eventually } from '../helpers/media.ts';
import { startTestService } from '../helpers/service.ts';
import type { TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const broker = privateBroker('kafka-test-outage-start');
let service: TestService;

before(async () => {
  const brokers = await broker.reserve();
  // Nothing listens at the broker's address yet: the service must start anyway.
  service = await startTestService(FILE, { KAFKA_BROKERS: brokers.join(',') });
});
after(async () => {
  await service?.close();
  await broker.remove();
});

test('started without Kafka: ready on Postgres alone, writes answer, and the events reach the topic once the broker comes', async () => {
  const ready = await checkedFetch(`${service.url}/readyz`);
  assert.equal(ready.response.status, 200, JSON.stringify(ready.body));
  assert.deepEqual(ready.body, { status: 'ready', checks: { database: 'ok', kafka: 'error' } });

  const tenant = await service.newTenant();
  const opts = clientOptions(service.url, tenant.key);
  const written = expectData(await api.upsertItem({ externalSystem: 'erp', externalId: 'OUTAGE-1', name: 'Written while Kafka is away' }, opts), 201);
  assert.equal(written.outcome, 'created');

  const brokers = await broker.start();
  // The service tries again at most every 30 s: twice that and more is a safety net, not a speed assumption.
  const created = await eventually(async () => {
    const records = await readTopic(brokers, service.kafka.topic('catalog.events.v1')).catch(() => []);
    return records.find((record) => record.headers['event-type'] === 'item.created' && record.value?.toString().includes('OUTAGE-1'));
  }, 'the item.created event on the topic', 120_000);
  assert.equal(JSON.parse(created.value!.toString()).data.serviceId, written.serviceId);

  const again = await checkedFetch(`${service.url}/readyz`);
  assert.deepEqual(again.body, { status: 'ready', checks: { database: 'ok', kafka: 'ok' } });
});
