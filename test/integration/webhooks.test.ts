// Webhooks end to end: subscriptions through the API, fan-out from Kafka, signed delivery to a real receiver, rotation, the guard, the receiver helper.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import pg from 'pg';
import { parse } from 'yaml';
import * as client from '../../generated/client.ts';
import type { EventType, WebhookCreated } from '../../generated/client.ts';
import { domainEvent, eventRow, writeOutbox } from '../../domain/events/outbox.ts';
import { createDeliveries } from '../../domain/webhooks/fan-out.ts';
import { createSender } from '../../domain/webhooks/send-delivery.ts';
import { secretBoxOf } from '../../app/secrets.ts';
import { constructEvent, verifyRequest, verifySignature } from '../../domain/webhooks/verify-signature.ts';
import { clientOptions } from '../helpers/client.ts';
import { metricValue } from '../helpers/metrics.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receipt, Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
let service: TestService;
let guarded: TestService;
let receiver: Receiver;
let alice: Tenant;
let bob: Tenant;

before(async () => {
  receiver = await startReceiver();
  service = await startTestService(FILE, {
    WEBHOOK_ALLOW_HTTP: 'true',
    OUTBOUND_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_DELAYS_MS: '0,20,20,20,20,20,20,20',
    WEBHOOK_TIMEOUT_MS: '2000',
    // Small here, so the no-SMTP mail path is quick to reach; the default 20 is tested with SMTP.
    WEBHOOK_DISABLE_AFTER: '2',
  });
  // The production rules: https only, no private or loopback targets. API only, same database.
  guarded = await startTestService(FILE, { DATABASE_URL: service.databaseUrl, ROLE: 'api' });
  alice = await service.newTenant();
  bob = await service.newTenant();
});

after(async () => {
  await guarded?.close();
  await service?.close();
  await receiver?.close();
});

const api = (tenant: Tenant, on: TestService = service) => clientOptions(on.url, tenant.key);

async function subscribe(tenant: Tenant, path: string, events: string[] = ['*'], extra: Partial<client.CreateWebhookRequest> = {}): Promise<WebhookCreated> {
  const created = await client.createWebhook({ url: receiver.url(path), events: events as client.EventSubscription[], ...extra }, {}, api(tenant));
  assert.equal(created.status, 201, JSON.stringify(created.data));
  if (created.status !== 201) throw new Error('not created');
  receiver.secrets(path, [created.data.data.secret]);
  return created.data.data;
}

/** What the lead's item code does: the event goes to the outbox in the writing transaction. */
async function emit(tenant: Tenant, type: EventType, resourceId: string, data: Record<string, unknown> = {}) {
  const event = domainEvent({ type, catalogId: tenant.catalogId, resourceId, data });
  await service.orm.em.fork().transactional(async (em) => {
    await writeOutbox(em, [eventRow(event)]);
  });
  return event;
}

const on = (path: string) => (receipts: Receipt[]) => receipts.filter((r) => r.path === path);

describe('subscriptions', () => {
  test('create returns a new whsec_ secret each time; list, read, update and delete never show it', async () => {
    const first = await subscribe(alice, '/crud', ['item.created'], { description: 'ERP sync', ownerEmail: 'ops@alice.example' });
    const second = await subscribe(alice, '/crud-2');
    assert.match(first.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(first.secret.slice(6), 'base64').length, 32);
    assert.notEqual(first.secret, second.secret);
    assert.deepEqual([first.status, first.consecutiveFailures, first.ownerEmail, first.description], ['active', 0, 'ops@alice.example', 'ERP sync']);

    const page1 = await client.listWebhooks({ limit: 1 }, api(alice));
    assert.equal(page1.status, 200);
    if (page1.status !== 200) return;
    assert.deepEqual(page1.data.data.webhooks.map((w) => w.id), [first.id]);
    assert.ok(page1.data.data.nextCursor);
    const page2 = await client.listWebhooks({ limit: 1, cursor: page1.data.data.nextCursor! }, api(alice));
    assert.equal(page2.status, 200);
    if (page2.status === 200) assert.deepEqual(page2.data.data.webhooks.map((w) => w.id), [second.id]);
    assert.equal(JSON.stringify(page1.data).includes('whsec_'), false, 'a secret was listed');

    const read = await client.getWebhook(first.id, api(alice));
    assert.equal(read.status, 200);
    if (read.status === 200) assert.equal('secret' in read.data.data, false);
    assert.equal((await client.getWebhook(first.id, api(bob))).status, 404, "another catalog's webhook is not found");

    const updated = await client.updateWebhook(first.id, { events: ['item.updated', 'item.deleted'], description: null }, api(alice));
    assert.equal(updated.status, 200);
    if (updated.status === 200) {
      assert.deepEqual(updated.data.data.events, ['item.updated', 'item.deleted']);
      assert.equal(updated.data.data.description, null);
    }
    assert.equal((await client.deleteWebhook(second.id, api(alice))).status, 200);
    assert.equal((await client.deleteWebhook(second.id, api(alice))).status, 404, 'a repeated delete is a 404');
    assert.equal((await client.deleteWebhook(first.id, api(bob))).status, 404);
  });

  test("'*' must stand alone; an Idempotency-Key repeat returns the first webhook and secret", async () => {
    const mixed = await client.createWebhook({ url: receiver.url('/x'), events: ['*', 'item.created'] }, {}, api(alice));
    assert.equal(mixed.status, 400);
    if (mixed.status === 400) assert.equal(mixed.data.error.details?.[0]?.path, 'events');
    const body = { url: receiver.url('/idem'), events: ['item.created' as const] };
    const once = await client.createWebhook(body, { idempotencyKey: 'idem-key-1' }, api(alice));
    const again = await client.createWebhook(body, { idempotencyKey: 'idem-key-1' }, api(alice));
    assert.equal(once.status, 201);
    assert.equal(again.status, 201);
    if (once.status === 201 && again.status === 201) {
      assert.equal(again.data.data.id, once.data.data.id);
      assert.equal(again.data.data.secret, once.data.data.secret);
      await client.deleteWebhook(once.data.data.id, api(alice));
    }
  });

  test('URL rules: https only, no credentials, no private, loopback, link-local or metadata host (also by DNS name)', async () => {
    const refused: Array<[string, RegExp]> = [
      ['http://hooks.merchant.example/a', /must use https .*WEBHOOK_ALLOW_HTTP=true/],
      ['https://user:secret@hooks.merchant.example/a', /credentials/],
      ['https://127.0.0.1/a', /private, loopback.*OUTBOUND_ALLOW_PRIVATE=true/],
      ['https://localhost:8443/a', /private, loopback/],
      ['https://[::1]/a', /private, loopback/],
      ['https://10.1.2.3/a', /private, loopback/],
      ['https://169.254.169.254/latest/meta-data', /private, loopback/],
      ['https://[::ffff:192.168.0.1]/a', /private, loopback/],
    ];
    for (const [url, message] of refused) {
      const answer = await client.createWebhook({ url, events: ['*'] }, {}, api(alice, guarded));
      assert.equal(answer.status, 400, url);
      if (answer.status === 400) {
        assert.equal(answer.data.error.details?.[0]?.path, 'url', url);
        assert.match(answer.data.error.details?.[0]?.message ?? '', message, url);
      }
    }
    const publicTarget = await client.createWebhook({ url: 'https://93.184.215.14/hook', events: ['*'] }, {}, api(alice, guarded));
    assert.equal(publicTarget.status, 201);
    if (publicTarget.status === 201) {
      const moved = await client.updateWebhook(publicTarget.data.data.id, { url: 'https://192.168.1.10/hook' }, api(alice, guarded));
      assert.equal(moved.status, 400, 'update applies the same rules');
      await client.deleteWebhook(publicTarget.data.data.id, api(alice));
    }
  });

  test('the guard runs at connect time: a host name resolving to loopback is refused before any byte is sent', async () => {
    const sender = createSender({ timeoutMs: 2000, allowPrivate: false, allowHttp: true });
    try {
      const before = receiver.receipts('/guard').length;
      const byName = await sender.send(`http://localhost:${new URL(receiver.baseUrl).port}/guard`, {}, Buffer.from('{}'));
      assert.equal(byName.ok, false);
      assert.equal(byName.statusCode, null);
      assert.match(byName.error ?? '', /refused by the network guard: localhost resolves to (127\.0\.0\.1|::1), .*OUTBOUND_ALLOW_PRIVATE=true allows them in development/);
      const byAddress = await sender.send(`${receiver.baseUrl}/guard`, {}, Buffer.from('{}'));
      assert.match(byAddress.error ?? '', /refused by the network guard/);
      assert.equal(receiver.receipts('/guard').length, before, 'the receiver was reached');
    } finally {
      await sender.close();
    }
  });
});

describe('delivery', () => {
  test("fan-out: each active webhook whose events match (or '*') gets the event; another catalog's never do", async () => {
    const createdOnly = await subscribe(alice, '/a-created', ['item.created']);
    const everything = await subscribe(alice, '/a-all', ['*']);
    await subscribe(bob, '/b-all', ['*']);
    const created = await emit(alice, 'item.created', 'SKU-1', { externalId: 'SKU-1', externalSystem: 'erp', serviceId: crypto.randomUUID(), sku: 'S1' });
    const stock = await emit(alice, 'stock.adjusted', 'SKU-1', { quantity: -2 });
    const bobs = await emit(bob, 'item.deleted', 'SKU-9');

    await receiver.waitFor('the fan-out', (r) => on('/a-all')(r).length >= 2 && on('/a-created')(r).length >= 1 && on('/b-all')(r).length >= 1);
    await new Promise((done) => setTimeout(done, 300));
    assert.deepEqual(on('/a-created')(receiver.receipts()).map((r) => r.event.id), [created.id]);
    assert.deepEqual(new Set(on('/a-all')(receiver.receipts()).map((r) => r.event.id)), new Set([created.id, stock.id]));
    assert.deepEqual(on('/b-all')(receiver.receipts()).map((r) => r.event.id), [bobs.id]);

    const list = await client.listWebhookDeliveries(everything.id, {}, api(alice));
    assert.equal(list.status, 200);
    if (list.status === 200) assert.equal(list.data.data.deliveries.length, 2);
    assert.equal((await client.listWebhookDeliveries(createdOnly.id, {}, api(bob))).status, 404);
  });

  test('a batch mixing catalogs with and without a webhook creates deliveries for the subscribed one only', async () => {
    const [carol, dave] = [await service.newTenant(), await service.newTenant()];
    const hook = await subscribe(dave, '/mixed', ['item.deleted']);
    const fanOutEvent = (tenant: Tenant, resourceId: string) => {
      const event = domainEvent({ type: 'item.deleted', catalogId: tenant.catalogId, resourceId, data: {} });
      const read = { id: event.id, catalogId: event.catalogId, type: event.type, createdAt: event.createdAt, payload: JSON.stringify(event) };
      return { ...read, read: () => read };
    };
    const events = [fanOutEvent(carol, 'C-1'), fanOutEvent(dave, 'D-1'), fanOutEvent(carol, 'C-2')];
    const pool = new pg.Pool({ connectionString: service.databaseUrl, max: 1 });
    try {
      // Due in a minute: nothing is attempted while the rows are checked.
      const options = { firstDelayMs: 60_000, leaseSlots: 0, leaseMs: 30_000, leaseToken: crypto.randomUUID() };
      const db = service.orm.em.fork();
      const secrets = secretBoxOf(service.config);
      assert.equal((await createDeliveries(db, secrets, events, options)).created, 1);
      assert.equal((await createDeliveries(db, secrets, [fanOutEvent(carol, 'C-3')], options)).created, 0);
      const { rows } = await pool.query<{ id: string; webhook_id: string; catalog_id: string; event_id: string; payload: string }>(
        'SELECT id, webhook_id, catalog_id, event_id, payload FROM webhook_deliveries WHERE catalog_id = ANY($1::uuid[]) AND event_type = $2',
        [[carol.catalogId, dave.catalogId], 'item.deleted']);
      const [{ id, ...row }] = rows as [(typeof rows)[number]];
      assert.deepEqual([row], [{ webhook_id: hook.id, catalog_id: dave.catalogId, event_id: events[1]!.id, payload: events[1]!.payload }]);
      // A UUIDv7 like every id of the service, its time within the test's.
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.ok(Math.abs(parseInt(id.replaceAll('-', '').slice(0, 12), 16) - Date.now()) < 10 * 60_000, id);
    } finally {
      await pool.end();
    }
  });

  test("each POST carries exactly the spec's headers and the event's bytes, signed with the webhook's secret", async () => {
    const hook = await subscribe(alice, '/headers', ['item.updated']);
    const event = await emit(alice, 'item.updated', 'SKU-é"\\', { name: 'Café "Ω" ✓', price: 10.5 });
    const [receipt] = on('/headers')(await receiver.waitFor('the delivery', (r) => on('/headers')(r).length > 0));
    assert.ok(receipt);
    assert.ok(receipt.rawBody.equals(Buffer.from(eventRow(event).payload, 'utf8')), 'body differs from the published bytes');
    assert.equal(receipt.headers['content-type'], 'application/json');
    assert.equal(receipt.headers['user-agent'], 'Service-Webhooks/1.0');
    assert.equal(receipt.headers['x-service-event-type'], 'item.updated');
    assert.equal(receipt.headers['x-service-event-id'], event.id);
    assert.equal(receipt.event.id, event.id);
    assert.match(String(receipt.headers['x-service-signature']), /^t=\d+,v1=[0-9a-f]{64}$/);
    assert.deepEqual(receipt.signedWith, [0], "the receiver's own HMAC check failed");
    const t = Number(/t=(\d+)/.exec(String(receipt.headers['x-service-signature']))![1]);
    assert.ok(Math.abs(t - Date.now() / 1000) < 5);
    // Standard Webhooks, beside the spec's headers.
    assert.equal(receipt.headers['webhook-id'], event.id);
    assert.equal(receipt.headers['webhook-timestamp'], String(t));
    assert.equal(receipt.standardValid, true);
    assert.equal(receipt.headers.location, undefined);
    void hook;
  });

  test('test ping on a webhook deleted while it runs is a 404, never a 500', async () => {
    const hook = await subscribe(alice, '/ping-deleted', ['item.created']);
    const pool = new pg.Pool({ connectionString: service.databaseUrl, max: 2 });
    const deleting = await pool.connect();
    try {
      // The delete holds the row: the ping's check still sees it, its insert waits on the row's lock.
      await deleting.query('BEGIN');
      await deleting.query('DELETE FROM webhooks WHERE id = $1', [hook.id]);
      const ping = client.testWebhook(hook.id, api(alice));
      const deadline = Date.now() + 60_000;
      for (;;) {
        const { rows } = await pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%webhook_deliveries%'`);
        if (rows.length > 0) break;
        assert.ok(Date.now() < deadline, 'the ping never waited on the deleted row');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await deleting.query('COMMIT');
      const answer = await ping;
      assert.equal(answer.status, 404, JSON.stringify(answer.data));
    } finally {
      deleting.release();
      await pool.end();
    }
  });

  test('test ping: a webhook.test event for that webhook only, logged with its attempt', async () => {
    const hook = await subscribe(alice, '/ping', ['item.created']);
    assert.equal(hook.lastSuccessAt, null, 'no success before the first delivery');
    await subscribe(alice, '/ping-other', ['*']);
    const attemptsBefore = (await metricValue(service.opsUrl, 'catalog_webhook_delivery_attempts_total', { outcome: 'succeeded' })) ?? 0;
    const queued = await client.testWebhook(hook.id, api(alice));
    assert.equal(queued.status, 202);
    if (queued.status !== 202) return;
    assert.match(queued.data.data.deliveryId, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a UUIDv7');
    const [receipt] = on('/ping')(await receiver.waitFor('the test event', (r) => on('/ping')(r).length > 0));
    assert.equal(receipt?.event.type, 'webhook.test');
    assert.equal(receipt?.event.id, queued.data.data.eventId);
    assert.deepEqual(receipt?.event.data, { webhookId: hook.id, message: 'This is a test event from the Catalog Service.' });
    assert.equal(on('/ping-other')(receiver.receipts()).length, 0);

    let detail: client.WebhookDeliveryDetail | undefined;
    for (let i = 0; i < 100 && detail?.status !== 'succeeded'; i++) {
      const read = await client.getWebhookDelivery(hook.id, queued.data.data.deliveryId, api(alice));
      if (read.status === 200) detail = read.data.data;
      await new Promise((done) => setTimeout(done, 20));
    }
    assert.equal(detail?.status, 'succeeded');
    assert.equal(detail?.body, receipt!.rawBody.toString('utf8'), 'the detail shows the exact body that was POSTed');
    assert.equal(detail?.eventUrl, null, 'a test ping is not in the event log');
    assert.equal(detail?.attemptCount, 1);
    assert.equal(detail?.nextAttemptAt, null);
    assert.equal(detail?.attempts.length, 1);
    assert.deepEqual({ ...detail!.attempts[0], durationMs: 0, startedAt: '' },
      { attemptNumber: 1, statusCode: 200, error: null, responseBodyExcerpt: 'ok', durationMs: 0, startedAt: '', throttled: false });
    const succeeded = await client.listWebhookDeliveries(hook.id, { status: 'succeeded' }, api(alice));
    const exhausted = await client.listWebhookDeliveries(hook.id, { status: 'exhausted' }, api(alice));
    if (succeeded.status === 200) assert.equal(succeeded.data.data.deliveries.length, 1);
    if (exhausted.status === 200) assert.equal(exhausted.data.data.deliveries.length, 0);
    const health = await client.getWebhook(hook.id, api(alice));
    const lastSuccessAt = health.status === 200 ? health.data.data.lastSuccessAt : null;
    assert.ok(lastSuccessAt !== null && Math.abs(Date.parse(lastSuccessAt) - Date.parse(detail!.attempts[0]!.startedAt)) < 10_000, `last success ${lastSuccessAt}`);
    // /metrics counted the attempt (this service's other tests may add theirs), and reads the outbox's backlog.
    const attemptsAfter = await metricValue(service.opsUrl, 'catalog_webhook_delivery_attempts_total', { outcome: 'succeeded' });
    assert.ok(attemptsAfter !== undefined && attemptsAfter >= attemptsBefore + 1, `attempts: ${attemptsBefore} → ${attemptsAfter}`);
    for (const name of ['catalog_outbox_pending_events', 'catalog_outbox_lag_seconds']) {
      const value = await metricValue(service.opsUrl, name);
      assert.ok(value !== undefined && Number.isFinite(value) && value >= 0, `${name} = ${value}`);
    }
  });

  test('rotate-secret: for 24 h deliveries carry two v1= entries, the new secret first', async () => {
    const hook = await subscribe(alice, '/rotate', ['webhook.test']);
    const rotated = await client.rotateWebhookSecret(hook.id, api(alice));
    assert.equal(rotated.status, 200);
    if (rotated.status !== 200) return;
    const { secret, previousSecretExpiresAt } = rotated.data.data;
    assert.notEqual(secret, hook.secret);
    assert.ok(Math.abs(Date.parse(previousSecretExpiresAt) - Date.now() - 24 * 3600_000) < 60_000);
    receiver.secrets('/rotate', [secret, hook.secret]);
    await client.testWebhook(hook.id, api(alice));
    const [receipt] = on('/rotate')(await receiver.waitFor('the delivery', (r) => on('/rotate')(r).length > 0));
    assert.match(String(receipt!.headers['x-service-signature']), /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    assert.deepEqual(receipt!.signedWith, [0, 1]);
    assert.equal(receipt!.standardValid, true);
    for (const key of [secret, hook.secret]) {
      assert.equal((await verifySignature({ header: String(receipt!.headers['x-service-signature']), body: receipt!.rawBody, secret: key })).valid, true);
    }
  });
});

describe('disable notice without SMTP', () => {
  test('the e-mail is written as an .eml file under <DATA_DIR>/mail', async () => {
    const hook = await subscribe(alice, '/down', ['item.deleted'], { ownerEmail: 'oncall@alice.example' });
    receiver.script('/down', [{ status: 500 }]);
    await emit(alice, 'item.deleted', 'A');
    await emit(alice, 'item.deleted', 'B');
    const folder = join(service.config.dataDir, 'mail');
    const deadline = Date.now() + 20_000;
    while (!(existsSync(folder) && readdirSync(folder).some((f) => f.endsWith('.eml')))) {
      assert.ok(Date.now() < deadline, 'no .eml file was written');
      await new Promise((done) => setTimeout(done, 50));
    }
    const mail = readFileSync(join(folder, readdirSync(folder).find((f) => f.endsWith('.eml'))!), 'utf8');
    assert.match(mail, /^To: oncall@alice\.example$/m);
    assert.match(mail, new RegExp(`^Subject: Webhook disabled: ${receiver.url('/down').replaceAll('.', '\\.')}$`, 'm'));
    const read = await client.getWebhook(hook.id, api(alice));
    if (read.status === 200) assert.deepEqual([read.data.data.status, read.data.data.consecutiveFailures], ['disabled', 2]);
  });
});

describe('event catalogue', () => {
  test("every event type has a webhooks entry with a schema; its example, delivered through '*', matches it", async () => {
    const contract = parse(readFileSync('openapi.yaml', 'utf8'));
    const types: string[] = contract.components.schemas.EventType.enum;
    assert.deepEqual(Object.keys(contract.webhooks).sort(), [...types].sort());
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    formats.default(ajv);
    ajv.addSchema(contract, 'contract');
    await subscribe(alice, '/catalogue', ['*']);
    const sent = new Map<string, string>();
    for (const type of types) {
      const entry = contract.webhooks[type].post;
      const exampleRef: string = Object.values<{ $ref: string }>(entry.requestBody.content['application/json'].examples)[0]!.$ref;
      const example = contract.components.examples[exampleRef.split('/').at(-1)!].value;
      // The example's payload, as the emitting feature writes it, for this test's catalog.
      const event = await emit(alice, type as EventType, example.resourceId, example.data);
      sent.set(event.id, type);
    }
    const received = on('/catalogue')(await receiver.waitFor('every event type', (r) => on('/catalogue')(r).length >= types.length));
    assert.deepEqual(new Set(received.map((r) => r.event.id)), new Set(sent.keys()));
    for (const receipt of received) {
      const type = sent.get(receipt.event.id)!;
      const pointer = `contract#/webhooks/${type}/post/requestBody/content/application~1json/schema`;
      const validate = ajv.compile({ $ref: pointer });
      assert.ok(validate(receipt.event), `${type}: ${JSON.stringify(validate.errors)}`);
      assert.equal(receipt.headers['x-service-event-type'], type);
    }
  });
});

describe('receiver helper (the package export)', () => {
  test('verifies real deliveries from the raw body in constant time, with the 300 s tolerance and several v1= entries', async () => {
    const hook = await subscribe(alice, '/helper', ['webhook.test']);
    await client.testWebhook(hook.id, api(alice));
    const [receipt] = on('/helper')(await receiver.waitFor('the delivery', (r) => on('/helper')(r).length > 0));
    const header = String(receipt!.headers['x-service-signature']);
    const t = Number(/t=(\d+)/.exec(header)![1]);
    const body = receipt!.rawBody;

    assert.deepEqual(await verifySignature({ header, body, secret: hook.secret }), { valid: true, timestamp: t });
    assert.equal((await verifySignature({ header, body: body.toString('utf8'), secret: ['whsec_other', hook.secret] })).valid, true);
    assert.deepEqual(await verifySignature({ header, body: Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 1)), secret: hook.secret }),
      { valid: false, reason: 'no_matching_signature' }, 're-serialized JSON must not verify');
    assert.deepEqual(await verifySignature({ header, body, secret: 'whsec_wrong' }), { valid: false, reason: 'no_matching_signature' });
    assert.deepEqual(await verifySignature({ header, body, secret: hook.secret, now: t + 301 }), { valid: false, reason: 'timestamp_out_of_tolerance' });
    assert.equal((await verifySignature({ header, body, secret: hook.secret, now: t - 300 })).valid, true);
    assert.deepEqual(await verifySignature({ header: undefined, body, secret: hook.secret }), { valid: false, reason: 'missing_header' });
    assert.deepEqual(await verifySignature({ header: 'v1=abc', body, secret: hook.secret }), { valid: false, reason: 'malformed_header' });
    const padded = `${header},v1=${'0'.repeat(64)}`;
    assert.equal((await verifySignature({ header: padded, body, secret: hook.secret })).valid, true, 'an extra v1= entry is ignored');

    const event = await constructEvent({ header, body, secret: hook.secret });
    assert.equal(event.id, receipt!.event.id);
    const request = new Request('http://receiver.example/hook', { method: 'POST', body: new Uint8Array(body), headers: { 'x-service-signature': header } });
    assert.equal((await verifyRequest(request, hook.secret)).type, 'webhook.test');
    await assert.rejects(constructEvent({ header, body, secret: 'whsec_wrong' }), { name: 'SignatureVerificationError', reason: 'no_matching_signature' });
  });
});
