// The retry ladder with millisecond delays: timeouts, redirects, Retry-After, manual retries, recovery, disabling with an e-mail, resuming.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as client from '../../generated/client.ts';
import type { WebhookCreated, WebhookDelivery, WebhookDeliveryDetail } from '../../generated/client.ts';
import { domainEvent, eventRow, writeOutbox } from '../../domain/events/outbox.ts';
import { nextAttemptDelay, parseRetryAfter } from '../../domain/webhooks/retry-schedule.ts';
import { clientOptions } from '../helpers/client.ts';
import { metricValue } from '../helpers/metrics.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { startSmtp } from '../helpers/smtp.ts';
import type { TestSmtp } from '../helpers/smtp.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receipt, Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
// The spec's ladder shape (immediate, then growing), in milliseconds.
const DELAYS = [0, 100, 150, 200, 250, 300, 350, 400];
// Far above what the local receiver takes to answer on a busy machine, so only the route that
// answers late (TIMEOUT_MS + 700 ms) times out.
const TIMEOUT_MS = 2000;
let service: TestService;
let receiver: Receiver;
let smtp: TestSmtp;
let tenant: Tenant;

before(async () => {
  receiver = await startReceiver();
  smtp = await startSmtp();
  service = await startTestService(FILE, {
    WEBHOOK_ALLOW_HTTP: 'true',
    OUTBOUND_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_DELAYS_MS: DELAYS.join(','),
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    SMTP_URL: smtp.url,
    MAIL_FROM: 'Catalog <catalog@service.example>',
  });
  tenant = await service.newTenant();
});

after(async () => {
  await service?.close();
  await receiver?.close();
  await smtp?.close();
});

/** A service and its tenant: the file's own (`service`, `tenant`) unless a test names another. */
interface Bed { readonly service: TestService; readonly tenant: Tenant }
const api = (bed: Bed = { service, tenant }) => clientOptions(bed.service.url, bed.tenant.key);
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
const on = (path: string) => (receipts: Receipt[]) => receipts.filter((r) => r.path === path);

async function subscribe(path: string, events: client.EventSubscription[] = ['*'], bed?: Bed): Promise<WebhookCreated> {
  const created = await client.createWebhook({ url: receiver.url(path), events }, {}, api(bed));
  if (created.status !== 201) throw new Error(`create failed: ${JSON.stringify(created.data)}`);
  receiver.secrets(path, [created.data.data.secret]);
  return created.data.data;
}

async function emit(count = 1, prefix = 'SKU', bed: Bed = { service, tenant }) {
  const events = Array.from({ length: count }, (_, i) => domainEvent({ type: 'item.created', catalogId: bed.tenant.catalogId, resourceId: `${prefix}-${i}`, data: { i } }));
  await bed.service.orm.em.fork().transactional(async (em) => {
    await writeOutbox(em, events.map((event) => eventRow(event)));
  });
  return events;
}

async function deliveries(hookId: string, status?: client.DeliveryStatus, bed?: Bed): Promise<WebhookDelivery[]> {
  const answer = await client.listWebhookDeliveries(hookId, { limit: 200, ...(status ? { status } : {}) }, api(bed));
  if (answer.status !== 200) throw new Error(`list failed: ${answer.status}`);
  return answer.data.data.deliveries;
}

async function detail(hookId: string, deliveryId: string, bed?: Bed): Promise<WebhookDeliveryDetail> {
  const answer = await client.getWebhookDelivery(hookId, deliveryId, api(bed));
  if (answer.status !== 200) throw new Error(`read failed: ${answer.status}`);
  return answer.data.data;
}

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 500)}`);
    await sleep(25);
  }
}

async function webhook(id: string): Promise<client.Webhook> {
  const answer = await client.getWebhook(id, api());
  if (answer.status !== 200) throw new Error(`get failed: ${answer.status}`);
  return answer.data.data;
}

describe('retry ladder', () => {
  test('8 attempts at the configured delays (±10 %), then exhausted; a manual retry re-sends the same delivery and a success resets the count', async () => {
    const hook = await subscribe('/ladder');
    let healthy = false;
    receiver.script('/ladder', () => (healthy ? { status: 204 } : { status: 500, body: 'x'.repeat(10_000) }));
    const [event] = await emit();
    const receipts = on('/ladder')(await receiver.waitFor('8 attempts', (r) => on('/ladder')(r).length >= 8));
    const [delivery] = await until('exhaustion', () => deliveries(hook.id), (d) => d[0]?.status === 'exhausted');
    assert.equal(delivery!.attemptCount, 8);
    assert.equal(delivery!.nextAttemptAt, null);
    assert.equal(delivery!.lastStatusCode, 500);
    assert.equal(delivery!.lastError, 'HTTP 500');
    assert.ok(receipts.every((r) => r.event.id === event!.id && r.signedWith[0] === 0));
    for (let i = 1; i < 8; i++) {
      const gap = receipts[i]!.receivedAt - receipts[i - 1]!.receivedAt;
      assert.ok(gap >= DELAYS[i]! * 0.9 - 5, `gap before attempt ${i + 1} was ${gap} ms, expected about ${DELAYS[i]} ms`);
      // The slack is a busy machine's (a test run beside others on two cores), not the schedule's.
      assert.ok(gap <= DELAYS[i]! * 1.1 + 1500, `gap before attempt ${i + 1} was ${gap} ms, expected about ${DELAYS[i]} ms`);
    }
    await sleep(DELAYS.at(-1)! * 2);
    assert.equal(on('/ladder')(receiver.receipts()).length, 8, 'no ninth automatic attempt');

    const logged = await detail(hook.id, delivery!.id);
    assert.deepEqual(logged.attempts.map((a) => a.attemptNumber), [1, 2, 3, 4, 5, 6, 7, 8]);
    for (const attempt of logged.attempts) {
      assert.equal(attempt.statusCode, 500);
      assert.equal(attempt.error, 'HTTP 500');
      assert.equal(attempt.responseBodyExcerpt, 'x'.repeat(4096), 'the excerpt is the first 4 KB');
      assert.ok(attempt.durationMs >= 0 && attempt.durationMs < TIMEOUT_MS);
    }
    assert.equal((await webhook(hook.id)).consecutiveFailures, 1);

    healthy = true;
    const retried = await client.retryWebhookDelivery(hook.id, delivery!.id, api());
    assert.equal(retried.status, 202);
    if (retried.status === 202) {
      assert.equal(retried.data.data.id, delivery!.id);
      assert.equal(retried.data.data.status, 'pending');
      assert.ok(Math.abs(Date.parse(retried.data.data.nextAttemptAt!) - Date.now()) < 5000);
    }
    const done = await until('the manual retry', () => detail(hook.id, delivery!.id), (d) => d.status === 'succeeded');
    assert.equal(done.attempts.length, 9);
    assert.equal(done.attempts[8]!.statusCode, 204);
    assert.equal(on('/ladder')(receiver.receipts()).at(-1)!.event.id, event!.id, 'the same event was re-sent');
    assert.equal((await webhook(hook.id)).consecutiveFailures, 0, 'a success resets the count');
  });

  test('an answer after the timeout fails the attempt; the next one succeeds (the receiver saw the event twice)', async () => {
    const hook = await subscribe('/slow');
    receiver.script('/slow', [{ delayMs: TIMEOUT_MS + 700 }, { status: 200 }]);
    await emit();
    const [delivery] = await until('success', () => deliveries(hook.id), (d) => d[0]?.status === 'succeeded');
    const logged = await detail(hook.id, delivery!.id);
    assert.equal(logged.attempts.length, 2);
    assert.equal(logged.attempts[0]!.statusCode, null);
    assert.equal(logged.attempts[0]!.error, `timeout after ${TIMEOUT_MS} ms`);
    assert.ok(logged.attempts[0]!.durationMs >= TIMEOUT_MS - 5);
    const seen = on('/slow')(receiver.receipts());
    assert.equal(seen.length, 2);
    assert.equal(seen[0]!.event.id, seen[1]!.event.id, 'receivers deduplicate by event id');
  });

  test('redirects are failures and are not followed', async () => {
    const hook = await subscribe('/moved');
    receiver.script('/moved', [{ status: 302, headers: { location: receiver.url('/elsewhere') }, body: 'moved\u0000away' }, { status: 200 }]);
    await emit();
    const [delivery] = await until('success', () => deliveries(hook.id), (d) => d[0]?.status === 'succeeded');
    const logged = await detail(hook.id, delivery!.id);
    assert.equal(logged.attempts[0]!.statusCode, 302);
    assert.equal(logged.attempts[0]!.responseBodyExcerpt, 'movedaway', 'a NUL byte (not storable in Postgres text) is dropped');
    assert.equal(logged.attempts[0]!.error, `HTTP 302: redirects are not followed (Location: ${receiver.url('/elsewhere')})`);
    assert.equal(receiver.receipts('/elsewhere').length, 0);
  });

  test('a 429 waits its whole Retry-After without using an attempt; a 503 Retry-After moves the retry, capped at twice the scheduled delay', async () => {
    const hook = await subscribe('/busy');
    receiver.script('/busy', [{ status: 429, headers: { 'retry-after': '1' } }, { status: 503, headers: { 'retry-after': '30' } }, { status: 200 }]);
    await emit();
    const [delivery] = await until('success', () => deliveries(hook.id), (d) => d[0]?.status === 'succeeded');
    const [first, second, third] = on('/busy')(receiver.receipts());
    const gap1 = second!.receivedAt - first!.receivedAt;
    const gap2 = third!.receivedAt - second!.receivedAt;
    // The 429 pauses the endpoint from the moment its answer arrives, after the receiver wrote it.
    assert.ok(gap1 >= 1000, `after 429 with Retry-After: 1 the gap was ${gap1} ms`);
    // The 503 is the ladder's first attempt: its second comes after at most twice its delay.
    assert.ok(gap2 >= 2 * DELAYS[1]! - 10 && gap2 < 1000, `after 503 with Retry-After: 30 the gap was ${gap2} ms (cap ${2 * DELAYS[1]!})`);
    const logged = await detail(hook.id, delivery!.id);
    assert.equal(logged.attemptCount, 2, 'the 429 is not one of the 8 attempts');
    assert.deepEqual(logged.attempts.map((a) => [a.attemptNumber, a.statusCode, a.throttled]), [[1, 429, true], [1, 503, false], [2, 200, false]]);
  });
});

// Its own service, whose second attempt waits MANUAL_RUNG_MS: a manual retry comes long before
// it however busy the machine, and the test then waits the automatic attempt out.
const MANUAL_RUNG_MS = 5000;
describe('manual retries', () => {
  let bed: Bed;
  before(async () => {
    const own = await startTestService(FILE.replace(/\.test\.ts$/, '-manual.test.ts'), {
      WEBHOOK_ALLOW_HTTP: 'true',
      OUTBOUND_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS_MS: [0, ...Array.from({ length: 7 }, () => MANUAL_RUNG_MS)].join(','),
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    });
    bed = { service: own, tenant: await own.newTenant() };
  });
  after(async () => {
    await bed?.service.close();
  });

  test('a manual retry replaces the pending automatic attempt instead of adding one', async () => {
    const hook = await subscribe('/manual', ['*'], bed);
    receiver.script('/manual', [{ status: 503 }, { status: 200 }]);
    await emit(1, 'SKU', bed);
    const [waiting] = await until('the first failure', () => deliveries(hook.id, undefined, bed), (d) => d[0]?.lastStatusCode === 503);
    assert.equal(waiting!.status, 'pending');
    assert.ok(Date.parse(waiting!.nextAttemptAt!) - Date.now() > 0, 'the automatic attempt is still ahead');
    const retried = await client.retryWebhookDelivery(hook.id, waiting!.id, api(bed));
    assert.equal(retried.status, 202);
    await until('success', () => detail(hook.id, waiting!.id, bed), (d) => d.status === 'succeeded');
    // Past the time the automatic attempt was due: it did not run.
    await sleep(Math.max(0, Date.parse(waiting!.nextAttemptAt!) - Date.now()) + 500);
    assert.equal(on('/manual')(receiver.receipts()).length, 2, 'the replaced automatic attempt still ran');
    assert.equal((await detail(hook.id, waiting!.id, bed)).attempts.length, 2);
  });
});

describe('schedule arithmetic', () => {
  test('jitter stays within ±10 %; Retry-After (seconds or HTTP date) is honoured up to twice the delay', () => {
    const delays = [0, 5000, 25000, 120000, 600000, 1800000, 7200000, 21600000];
    for (let made = 1; made < 8; made++) {
      assert.equal(nextAttemptDelay(made, delays, null, () => 0), Math.round(delays[made]! * 0.9));
      assert.equal(nextAttemptDelay(made, delays, null, () => 1), Math.round(delays[made]! * 1.1));
    }
    assert.equal(nextAttemptDelay(8, delays), null, 'the 8th failure exhausts');
    assert.equal(nextAttemptDelay(1, delays, 8000, () => 0.5), 8000);
    assert.equal(nextAttemptDelay(1, delays, 60_000, () => 0.5), 10_000, 'capped at twice the scheduled delay');
    assert.equal(nextAttemptDelay(1, delays, 1000, () => 0.5), 5000, 'never earlier than scheduled');
    const now = Date.parse('2026-11-21T12:00:00Z');
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter('Sat, 21 Nov 2026 12:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('soon', now), null);
    assert.equal(parseRetryAfter(undefined, now), null);
  });
});

describe('disabling, resuming and recovery', () => {
  test('20 consecutive exhausted deliveries disable the webhook and e-mail the catalog owner once over SMTP; resume re-enables it', async () => {
    const hook = await subscribe('/broken');
    const disabledBefore = (await metricValue(service.opsUrl, 'catalog_webhooks_disabled_total')) ?? 0;
    let healthy = false;
    // The late event's attempts are slow (just under the timeout): it is still climbing its ladder
    // when the other 20 have exhausted theirs, so it must pause, not exhaust.
    receiver.script('/broken', (r) => (healthy ? { status: 200 } : { status: 500, delayMs: r.event.resourceId.startsWith('LATE') ? TIMEOUT_MS - 150 : 0 }));
    await emit(20);
    const [late] = await emit(1, 'LATE');
    const disabled = await until('disabling', () => webhook(hook.id), (w) => w.status === 'disabled');
    assert.equal(disabled.consecutiveFailures, 20);
    assert.ok(disabled.disabledAt);
    assert.equal((await deliveries(hook.id, 'exhausted')).length, 20);
    assert.equal(await metricValue(service.opsUrl, 'catalog_webhooks_disabled_total'), disabledBefore + 1, 'counted for the alert on disabled webhooks');
    const [paused] = await until('the late delivery to pause', () => deliveries(hook.id, 'pending'), (d) => d.length === 1 && d[0]!.nextAttemptAt === null);
    assert.equal(paused!.eventId, late!.id);
    assert.ok(paused!.attemptCount < 8);

    const [mail] = await smtp.waitFor(1);
    assert.deepEqual(mail!.to, [`owner${/owner(\d+)@/.exec(mail!.to[0]!)?.[1]}@merchant.example`]);
    assert.match(mail!.raw, /Subject: Webhook disabled: http:\/\/127\.0\.0\.1:\d+\/broken/);
    assert.match(mail!.text, new RegExp(`POST /api/v1/catalog/webhooks/${hook.id}/resume`));
    assert.match(mail!.text, /after 20 consecutive deliveries failed/);

    // While disabled: no new deliveries, no test, no retry.
    await emit(1);
    await sleep(800);
    assert.equal((await deliveries(hook.id)).length, 21, 'a disabled webhook got a new delivery');
    assert.equal((await detail(hook.id, paused!.id)).attemptCount, paused!.attemptCount, 'a paused delivery was attempted');
    assert.equal((await client.testWebhook(hook.id, api())).status, 409);
    const someDelivery = (await deliveries(hook.id))[0]!;
    assert.equal((await client.retryWebhookDelivery(hook.id, someDelivery.id, api())).status, 409);
    assert.equal((await client.recoverWebhook(hook.id, { since: new Date(Date.now() - 60_000).toISOString() }, api())).status, 409);

    healthy = true;
    const resumed = await client.resumeWebhook(hook.id, api());
    assert.equal(resumed.status, 200);
    if (resumed.status === 200) {
      assert.equal(resumed.data.data.status, 'active');
      assert.equal(resumed.data.data.consecutiveFailures, 0);
      assert.equal(resumed.data.data.disabledAt, null);
    }
    const [fresh] = await emit(1);
    await receiver.waitFor('a delivery after resume', (r) => on('/broken')(r).some((x) => x.event.id === fresh!.id));
    await until('the paused delivery to go out', () => detail(hook.id, paused!.id), (d) => d.status === 'succeeded');
    await sleep(300);
    assert.equal(smtp.messages.length, 1, 'exactly one e-mail');
  });

  test('recover re-queues the failed deliveries of a window (at most 14 days back)', async () => {
    const hook = await subscribe('/recover');
    let healthy = false;
    receiver.script('/recover', () => (healthy ? { status: 200 } : { status: 500 }));
    const start = new Date(Date.now() - 1000).toISOString();
    const events = await emit(3);
    await until('exhaustion', () => deliveries(hook.id, 'exhausted'), (d) => d.length === 3);

    const tooOld = await client.recoverWebhook(hook.id, { since: new Date(Date.now() - 15 * 24 * 3600_000).toISOString() }, api());
    assert.equal(tooOld.status, 400);
    const backwards = await client.recoverWebhook(hook.id, { since: start, until: new Date(Date.now() - 3_600_000).toISOString() }, api());
    assert.equal(backwards.status, 400);
    const empty = await client.recoverWebhook(hook.id, { since: new Date(Date.now() - 60_000).toISOString(), until: start }, api());
    assert.equal(empty.status, 202);
    if (empty.status === 202) assert.equal(empty.data.data.requeued, 0);

    healthy = true;
    const recovered = await client.recoverWebhook(hook.id, { since: start }, api());
    assert.equal(recovered.status, 202);
    if (recovered.status === 202) {
      assert.equal(recovered.data.data.requeued, 3);
      // The link lists the window's events from the event log; each delivery links to its own.
      const logged = await fetch(`${service.url}${recovered.data.data.eventsUrl}`, { headers: { authorization: `Bearer ${tenant.key}` } });
      const ids = ((await logged.json()) as { data: { events: Array<{ id: string }> } }).data.events.map((e) => e.id);
      for (const event of events) assert.ok(ids.includes(event.id), `${event.id} in ${recovered.data.data.eventsUrl}`);
      const [delivery] = await deliveries(hook.id);
      const detail = await client.getWebhookDelivery(hook.id, delivery!.id, api());
      if (detail.status !== 200) assert.fail(`delivery detail: ${detail.status}`);
      const linked = await fetch(`${service.url}${detail.data.data.eventUrl}`, { headers: { authorization: `Bearer ${tenant.key}` } });
      assert.equal(((await linked.json()) as { data: { id: string } }).data.id, delivery!.eventId);
    }
    await until('recovery', () => deliveries(hook.id, 'succeeded'), (d) => d.length === 3);
    const ok = on('/recover')(receiver.receipts()).filter((r) => r.signedWith.length === 1);
    assert.deepEqual(new Set(ok.slice(-3).map((r) => r.event.id)), new Set(events.map((e) => e.id)));
  });
});
