// A consumers process killed (SIGKILL) while a receiver holds its request open loses no delivery: another process completes it.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import * as client from '../../generated/client.ts';
import { domainEvent, eventRow, writeOutbox } from '../../domain/events/outbox.ts';
import { LOST_ATTEMPT } from '../../domain/webhooks/delivery-store.ts';
import { clientOptions } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { startConsumersProcess } from '../helpers/consumers-process.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
const TIMEOUT_MS = 1500;
let service: TestService;
let receiver: Receiver;
let tenant: Tenant;
const children = new Set<ChildProcess>();

const WORKER_ENV = {
  WEBHOOK_ALLOW_HTTP: 'true',
  OUTBOUND_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_DELAYS_MS: '0,100,100,100,100,100,100,100',
  WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
};

const startConsumers = (name: string, ready?: string) =>
  startConsumersProcess({ file: FILE, databaseUrl: service.databaseUrl, env: WORKER_ENV, name, children, ...(ready ? { ready } : {}) });

const exited = (child: ChildProcess) => new Promise<number | null>((done) => {
  if (child.exitCode !== null || child.signalCode !== null) done(child.exitCode);
  else child.once('exit', (code) => done(code));
});

before(async () => {
  receiver = await startReceiver();
  // This process serves the API only; the consumers (relay, fan-out, dispatcher) run in children.
  service = await startTestService(FILE, { ...WORKER_ENV, ROLE: 'api' });
  tenant = await service.newTenant();
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await service?.close();
  await receiver?.close();
});

test('SIGKILL mid-attempt: the lease expires, a new worker delivers, exactly one success is recorded', async (t) => {
  const created = await client.createWebhook({ url: receiver.url('/held'), events: ['item.created'] }, {}, clientOptions(service.url, tenant.key));
  if (created.status !== 201) throw new Error(`create failed: ${created.status}`);
  const hook = created.data.data;
  receiver.secrets('/held', [hook.secret]);
  // The first request is held open until its sender dies; the next is answered at once.
  receiver.script('/held', [{ hold: true }, { status: 200 }]);

  const first = await startConsumers('worker 1');
  const event = domainEvent({ type: 'item.created', catalogId: tenant.catalogId, resourceId: 'SKU-CRASH', data: {} });
  await service.orm.em.fork().transactional(async (em) => {
    await writeOutbox(em, [eventRow(event)]);
  });
  await receiver.waitFor('the held request', (r) => r.some((x) => x.path === '/held'), 60_000);
  first.kill('SIGKILL');
  await exited(first);

  const db = await sqlClient(service.databaseUrl);
  try {
    const { rows: [inFlight] } = await db.query(
      'SELECT status, attempt_count, lease_token IS NOT NULL AS leased FROM webhook_deliveries WHERE webhook_id = $1', [hook.id]);
    assert.deepEqual(inFlight, { status: 'pending', attempt_count: 1, leased: true }, 'the killed worker held the delivery');

    // Deliveries already in Postgres need no Kafka: the new worker's dispatcher takes them over
    // once the dead worker's lease ends (its Kafka groups may still wait for the dead member).
    await startConsumers('worker 2', 'webhook dispatcher started');
    const receipts = await receiver.waitFor('the second attempt', (r) => r.filter((x) => x.path === '/held').length >= 2, 60_000);
    const held = receipts.filter((x) => x.path === '/held');
    const leaseMs = 2 * TIMEOUT_MS + 2000;
    t.diagnostic(`redelivered ${held[1]!.receivedAt - held[0]!.receivedAt} ms after the first attempt (lease ${leaseMs} ms)`);
    assert.ok(held[1]!.receivedAt - held[0]!.receivedAt >= leaseMs - 1000, 'the delivery was taken over before its lease ended');
    assert.ok(held.every((x) => x.event.id === event.id && x.signedWith[0] === 0), 'both receipts are the same signed event');

    let deliveries: Array<{ id: string; status: string }> = [];
    for (let i = 0; i < 200 && deliveries[0]?.status !== 'succeeded'; i++) {
      deliveries = (await db.query('SELECT id, status FROM webhook_deliveries WHERE webhook_id = $1', [hook.id])).rows;
      await new Promise((done) => setTimeout(done, 25));
    }
    assert.equal(deliveries.length, 1, 'one delivery, even if the event was read again from Kafka');
    assert.equal(deliveries[0]!.status, 'succeeded');
    const attempts = (await db.query(
      'SELECT attempt_number, status_code, error FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt_number',
      [deliveries[0]!.id])).rows;
    assert.deepEqual(attempts, [
      { attempt_number: 1, status_code: null, error: LOST_ATTEMPT },
      { attempt_number: 2, status_code: 200, error: null },
    ]);
    assert.equal(attempts.filter((a) => a.status_code === 200).length, 1, 'exactly one success');
  } finally {
    await db.end();
  }
});
