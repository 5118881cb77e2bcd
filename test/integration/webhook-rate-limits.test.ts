// A webhook's rate limit over real HTTP: the API's rateLimit and backlog, the backlog in /metrics, a pace held below a receiver's own limit (also by two consumers processes, and after they stalled), a receiver's 429 pausing its endpoint without using attempts, and ordering and filters under a pace.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, beforeEach, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { WebhookCreated, WebhookRateLimit } from '../../generated/client.ts';
import { domainEvent, eventRow, writeOutbox } from '../../domain/events/outbox.ts';
import { query } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { metricValue } from '../helpers/metrics.ts';
import { startConsumersProcess } from '../helpers/consumers-process.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receipt, Receiver, Reply } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
// Deliveries of the main pacing test; the others send half as many. At PACE deliveries a second
// 3,000 take 30 s; the 50,000 are the benchmark's (WEBHOOK_PACE_COUNT to try more here).
const COUNT = Number(process.env.WEBHOOK_PACE_COUNT ?? 3000);
// The webhook's pace, below the receiver's own limit: the receiver must never need to say 429.
const PACE = 100;
const RECEIVER_RATE = 150;
// The ladder in milliseconds: were a 429 one of the 8 attempts, a delivery would be exhausted
// within half a second of 429s.
const DELAYS = [0, 50, 50, 50, 50, 50, 50, 50];
// A pace's share of error: the achieved rate must be within 10 % of the set one.
const TOLERANCE = 0.1;
// How long the fleet stalls in the two-process test: past SEND_AHEAD_S many times over.
const STALL_MS = 2000;
// What the receiver answers above its limit.
const RETRY_AFTER_S = 1;
// How long a test may wait for its deliveries: their time at the pace, doubled, and a margin for a
// busy machine's start (the fan-out and the relay), not a guess at its speed.
const deliveredWithin = (count: number, perSecond: number) => Math.ceil((2 * count / perSecond) * 1000) + 60_000;

const ENV = {
  WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_DELAYS_MS: DELAYS.join(','), WEBHOOK_TIMEOUT_MS: '5000',
};
let service: TestService;
let receiver: Receiver;
let tenant: Tenant;
const children = new Set<ChildProcess>();
const opts = () => clientOptions(service.url, tenant.key);
const db = () => service.orm.em.fork() as unknown as Db;

before(async () => {
  receiver = await startReceiver();
  service = await startTestService(FILE, ENV);
});
// A catalog per test: its webhooks see none of the other tests' events.
beforeEach(async () => {
  tenant = await service.newTenant();
});
after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await service?.close();
  await receiver?.close();
});

async function subscribe(path: string, extra: Partial<api.CreateWebhookRequest> = {}): Promise<WebhookCreated> {
  const created = expectData(await api.createWebhook({ url: receiver.url(path), events: ['item.created'], ...extra }, {}, opts()), 201);
  receiver.secrets(path, [created.secret]);
  return created;
}

/** `count` item.created events through the outbox (the relay and the fan-out as in production), `data.n` their number. */
async function emit(count: number, prefix: string, data: (i: number) => Record<string, unknown> = (i) => ({ n: i })) {
  const events = Array.from({ length: count }, (_, i) => domainEvent({ type: 'item.created', catalogId: tenant.catalogId, resourceId: `${prefix}-${i}`, data: data(i) }));
  // In chunks, as imports write them: one outbox batch per chunk.
  for (let i = 0; i < events.length; i += 500) {
    await service.orm.em.fork().transactional(async (em) => writeOutbox(em, events.slice(i, i + 500).map((event) => eventRow(event))));
  }
  return events;
}

/** A receiver path that allows `perSecond` requests a second (a token bucket of one second's worth) and answers 429 above it. */
function limitedReceiver(path: string, perSecond: number, retryAfter: string | undefined = String(RETRY_AFTER_S)) {
  let tokens = perSecond;
  let refilledAt = Date.now();
  const answers: Array<{ at: number; status: number; eventId: string }> = [];
  receiver.script(path, (receipt): Reply => {
    const now = Date.now();
    tokens = Math.min(perSecond, tokens + ((now - refilledAt) / 1000) * perSecond);
    refilledAt = now;
    const allowed = tokens >= 1;
    if (allowed) tokens -= 1;
    answers.push({ at: now, status: allowed ? 200 : 429, eventId: receipt.event.id });
    return allowed ? { status: 200 } : { status: 429, ...(retryAfter === undefined ? {} : { headers: { 'retry-after': retryAfter } }) };
  });
  return {
    answers,
    delivered: () => new Set(answers.filter((a) => a.status === 200).map((a) => a.eventId)),
    /** Deliveries a second between the first and the last delivered, less `stalledMs` when nothing could be sent. */
    rate(stalledMs = 0) {
      const ok = answers.filter((a) => a.status === 200);
      return (ok.length - 1) / ((ok.at(-1)!.at - ok[0]!.at - stalledMs) / 1000);
    },
  };
}

const waitDelivered = (what: string, delivered: () => Set<string>, count: number, timeoutMs: number) =>
  receiver.waitFor(what, () => delivered().size >= count, timeoutMs);

/** What `read` answers once `check` holds (the relay, the fan-out and settlements run in the background). */
async function eventually<T>(what: string, read: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${JSON.stringify(value).slice(0, 500)}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

const backlogWhen = (id: string, what: string, check: (backlog: api.WebhookBacklog) => boolean) =>
  eventually(`a backlog of ${what}`, async () => expectData(await api.getWebhook(id, opts()), 200).backlog, check);

/** The webhook's health after its deliveries: none exhausted, still active, no failure counted. */
async function assertHealthy(hook: WebhookCreated) {
  const exhausted = expectData(await api.listWebhookDeliveries(hook.id, { status: 'exhausted', limit: 10 }, opts()), 200);
  assert.equal(exhausted.deliveries.length, 0, 'no delivery exhausted');
  const read = expectData(await api.getWebhook(hook.id, opts()), 200);
  assert.equal(read.status, 'active');
  assert.equal(read.consecutiveFailures, 0);
  return read;
}

test('the API sets, changes and clears a rate limit, refuses invalid ones with a 400, and reports the backlog', async () => {
  const hook = await subscribe('/api', { rateLimit: { perSecond: 0.01, maxInFlight: 3 } });
  assert.deepEqual(hook.rateLimit, { perSecond: 0.01, maxInFlight: 3 });
  assert.deepEqual(hook.backlog, { waiting: 0, oldestWaitingSince: null, pausedUntil: null });
  // One every 100 s: the first of five goes at once, four wait, and the backlog says since when.
  const started = Date.now();
  await emit(5, 'API');
  let backlog = await backlogWhen(hook.id, 'four waiting', (b) => b.waiting === 4 && receiver.receipts('/api').length === 1);
  assert.ok(Date.parse(backlog.oldestWaitingSince!) >= started - 1000, `oldest waiting since ${backlog.oldestWaitingSince}`);
  const listed = expectData(await api.listWebhooks({ limit: 50 }, opts()), 200).webhooks.find((w) => w.id === hook.id)!;
  assert.equal(listed.backlog.waiting, 4);

  const changed = expectData(await api.updateWebhook(hook.id, { rateLimit: { perSecond: 20 } }, opts()), 200);
  assert.deepEqual(changed.rateLimit, { perSecond: 20 });
  // The new pace applies to those already waiting: the four arrive within a second or so, not in 400 s.
  await receiver.waitFor('the five at the new pace', (all) => all.filter((r) => r.path === '/api').length === 5, 30_000);
  const cleared = expectData(await api.updateWebhook(hook.id, { rateLimit: null }, opts()), 200);
  assert.equal(cleared.rateLimit, null);
  backlog = await backlogWhen(hook.id, 'none waiting', (b) => b.waiting === 0);
  assert.deepEqual(backlog, { waiting: 0, oldestWaitingSince: null, pausedUntil: null });

  const refused = async (rateLimit: unknown, path: string) => {
    const body = { url: receiver.url('/bad'), events: ['*'] as api.EventSubscription[], rateLimit: rateLimit as WebhookRateLimit };
    const createAnswer = expectStatus(await api.createWebhook(body, {}, opts()), 400);
    assert.equal(createAnswer.success, false);
    assert.equal(createAnswer.error.code, 'validation_error');
    assert.ok(createAnswer.error.details?.some((d) => d.path.startsWith(path)), `${JSON.stringify(rateLimit)}: ${JSON.stringify(createAnswer.error.details)}`);
    const updateAnswer = expectStatus(await api.updateWebhook(hook.id, { rateLimit: rateLimit as WebhookRateLimit }, opts()), 400);
    assert.equal(updateAnswer.error.code, 'validation_error');
  };
  await refused({ perSecond: 0 }, 'rateLimit');
  await refused({ perSecond: -5 }, 'rateLimit');
  await refused({ perSecond: 10_001 }, 'rateLimit');
  await refused({ perSecond: 10, maxInFlight: 0 }, 'rateLimit');
  await refused({ perSecond: 10, maxInFlight: 1.5 }, 'rateLimit');
  await refused({ perSecond: 10, burst: 20 }, 'rateLimit');
  await refused({ maxInFlight: 5 }, 'rateLimit');
  await refused({ perSecond: '10' }, 'rateLimit');
  assert.equal(expectData(await api.getWebhook(hook.id, opts()), 200).rateLimit, null, 'a refused change changes nothing');
});

test('the operations port\'s /metrics show a webhook\'s backlog and its age while deliveries wait, and no series once it drained', async () => {
  const path = '/metered';
  // One every 20 s: of four events the first goes at once, three wait a minute at most.
  const hook = await subscribe(path, { rateLimit: { perSecond: 0.05 } });
  await emit(4, 'METERED');
  const waiting = await backlogWhen(hook.id, 'three waiting', (b) => b.waiting === 3 && receiver.receipts(path).length === 1);
  const labels = { webhook_id: hook.id, catalog_id: tenant.catalogId, status: 'active' };
  const scrape = (name: string) => () => metricValue(service.opsUrl, name, labels);
  // The gauges are read at most every 5 s: within a few scrapes they show what the API answered.
  await eventually('the backlog in /metrics', scrape('catalog_webhook_backlog_deliveries'), (v) => v === waiting.waiting);
  const age = await scrape('catalog_webhook_backlog_oldest_age_seconds')();
  assert.ok(age !== undefined && age > 0 && age < 120, `the oldest waiting delivery's age: ${age}`);

  await api.updateWebhook(hook.id, { rateLimit: null }, opts());
  await receiver.waitFor('the rest once the limit is cleared', (all) => all.filter((r) => r.path === path).length >= 4, 30_000);
  await backlogWhen(hook.id, 'none waiting', (b) => b.waiting === 0);
  // A drained webhook has no series: not a last value left behind.
  await eventually('the series gone', scrape('catalog_webhook_backlog_deliveries'), (v) => v === undefined);
  assert.equal(await scrape('catalog_webhook_backlog_oldest_age_seconds')(), undefined);
});

test('a webhook paced below its receiver\'s limit gets every delivery at its pace, and the receiver never says 429', async () => {
  const path = '/paced';
  const hook = await subscribe(path, { rateLimit: { perSecond: PACE } });
  const limited = limitedReceiver(path, RECEIVER_RATE);
  await emit(COUNT, 'PACED');
  await waitDelivered('every paced delivery', limited.delivered, COUNT, deliveredWithin(COUNT, PACE));
  assert.equal(limited.answers.filter((a) => a.status === 429).length, 0, 'the receiver never had to say 429');
  const rate = limited.rate();
  assert.ok(Math.abs(rate - PACE) <= PACE * TOLERANCE, `achieved ${rate.toFixed(1)}/s for a pace of ${PACE}/s`);
  const read = await assertHealthy(hook);
  assert.equal(read.backlog.waiting, 0);
});

test('without a limit, the receiver\'s 429s pause its endpoint: nothing is sent before Retry-After, nothing is exhausted', async () => {
  const path = '/unpaced';
  const hook = await subscribe(path);
  const limited = limitedReceiver(path, RECEIVER_RATE);
  const count = COUNT / 2;
  await emit(count, 'FLOOD');
  await waitDelivered('every delivery despite 429s', limited.delivered, count, deliveredWithin(count, RECEIVER_RATE / 2));
  assert.ok(limited.answers.some((a) => a.status === 429), 'the receiver was flooded and said 429');
  await assertHealthy(hook);
  // When the service sent each attempt, from its log: after it read the first 429 (at the latest
  // when that attempt ended), it started none before Retry-After passed. The 50 ms cover reading
  // the 429's body, between the pause (as the status arrives) and the attempt's end.
  const attempts = await query<{ started: Date; ended: Date; status_code: number | null; throttled: boolean }>(db(),
    `SELECT a.started_at AS started, a.started_at + a.duration_ms * interval '1 millisecond' AS ended, a.status_code, a.throttled
       FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.webhook_id = $1 ORDER BY a.started_at`, [hook.id]);
  const throttled = attempts.filter((a) => a.throttled);
  assert.ok(throttled.length > 0 && throttled.every((a) => a.status_code === 429), 'each 429 is logged as a throttled attempt');
  const learned = Math.min(...throttled.map((a) => new Date(a.ended).getTime()));
  const during = attempts.filter((a) => new Date(a.started).getTime() > learned + 1 && new Date(a.started).getTime() < learned + RETRY_AFTER_S * 1000 - 50);
  assert.equal(during.length, 0, `${during.length} attempts started during the pause`);
  // None climbed the ladder: every delivery succeeded on the ladder's first attempt.
  const [climbed] = await query<{ n: string }>(db(), `SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = $1 AND attempt_count <> 1`, [hook.id]);
  assert.equal(Number(climbed!.n), 0, 'a 429 is not one of the 8 attempts');
});

test('a 429 without Retry-After pauses the endpoint for a second, and the delivery is sent again without using an attempt', async () => {
  const path = '/bare-429';
  const hook = await subscribe(path);
  receiver.script(path, [{ status: 429 }, { status: 200 }]);
  await emit(1, 'BARE');
  await receiver.waitFor('the second request', (all) => all.filter((r) => r.path === path).length === 2, deliveredWithin(1, 1));
  const [first, second] = receiver.receipts(path);
  assert.ok(second!.receivedAt - first!.receivedAt >= 1000, `sent again after ${second!.receivedAt - first!.receivedAt} ms`);
  const [delivery] = expectData(await api.listWebhookDeliveries(hook.id, { limit: 10 }, opts()), 200).deliveries;
  const detail = await eventually('the delivery settled', async () => expectData(await api.getWebhookDelivery(hook.id, delivery!.id, opts()), 200), (d) => d.status === 'succeeded');
  assert.equal(detail.attemptCount, 1);
  assert.deepEqual(detail.attempts.map((a) => [a.attemptNumber, a.statusCode, a.throttled]), [[1, 429, true], [1, 200, false]]);
});

test('a paced endpoint\'s backlog does not slow another endpoint\'s deliveries of the same events, also once a stall left it behind', async () => {
  const slowRate = 200;
  const count = 3000;
  const slow = await subscribe('/slow', { rateLimit: { perSecond: slowRate } });
  await emit(count, 'SIDE');
  const on = (path: string) => (all: Receipt[]) => all.filter((r) => r.path === path).length;
  await receiver.waitFor('a tenth of the paced deliveries', (all) => on('/slow')(all) >= count / 10, deliveredWithin(count, slowRate));
  // The process stalls while the paced endpoint's slots pass: hundreds are overdue when it runs
  // again, ahead of every delivery that falls due after them.
  await service.stall(STALL_MS);
  // Ordered: its deliveries go through the claim's walk (an unordered one's are sent as they are
  // created), behind those overdue ones.
  await subscribe('/fast', { ordered: true });
  const more = 300;
  await emit(more, 'SIDE-MORE');
  await receiver.waitFor('the unpaced endpoint\'s deliveries', (all) => on('/fast')(all) >= more, deliveredWithin(count, slowRate));
  const slowSoFar = on('/slow')(receiver.receipts());
  // The paced one needs (count + more) / slowRate = 16.5 s: it is far from done when the other is.
  assert.ok(slowSoFar < count * 0.8, `the paced endpoint had ${slowSoFar} of ${count + more} when the other had all ${more}`);
  const backlog = expectData(await api.getWebhook(slow.id, opts()), 200).backlog;
  assert.ok(backlog.waiting > 0 && backlog.oldestWaitingSince !== null, `the paced endpoint's backlog: ${JSON.stringify(backlog)}`);
  await api.updateWebhook(slow.id, { rateLimit: null }, opts());
  await receiver.waitFor('the rest once the limit is cleared', (all) => on('/slow')(all) >= count + more, 30_000);
});

test('the pace holds across two consumers processes, and after both stalled: the limit is the endpoint\'s, not each process\'s', async () => {
  const second = await startConsumersProcess({ file: FILE, databaseUrl: service.databaseUrl, env: ENV, name: 'second consumers', children });
  const path = '/fleet';
  const hook = await subscribe(path, { rateLimit: { perSecond: PACE } });
  const limited = limitedReceiver(path, RECEIVER_RATE);
  const count = COUNT / 2;
  await emit(count, 'FLEET');
  await waitDelivered('a fifth of the deliveries', limited.delivered, count / 5, deliveredWithin(count, PACE));
  // The whole fleet stalls (the service's consumers and the second process) while slots keep
  // passing: when it runs again, the deliveries due meanwhile go out at the pace, not together.
  second.kill('SIGSTOP');
  const stalledAt = Date.now();
  await service.stall(STALL_MS);
  second.kill('SIGCONT');
  const stalledMs = Date.now() - stalledAt;
  await waitDelivered('every delivery of the fleet', limited.delivered, count, deliveredWithin(count, PACE));
  assert.equal(limited.answers.filter((a) => a.status === 429).length, 0, 'the receiver never had to say 429');
  const rate = limited.rate(stalledMs);
  assert.ok(Math.abs(rate - PACE) <= PACE * TOLERANCE, `two processes achieved ${rate.toFixed(1)}/s for a pace of ${PACE}/s (the stall of ${stalledMs} ms aside)`);
  await assertHealthy(hook);
});

test('maxInFlight caps the attempts open at once across the fleet, whatever the pace', async () => {
  // Runs after the two-process test: its second consumers process claims too.
  const path = '/capped';
  const cap = 2;
  const answerAfterMs = 200;
  const hook = await subscribe(path, { rateLimit: { perSecond: 1000, maxInFlight: cap } });
  receiver.script(path, () => ({ status: 200, delayMs: answerAfterMs }));
  const count = 40;
  await emit(count, 'CAPPED');
  await receiver.waitFor('every capped delivery', (all) => all.filter((r) => r.path === path).length >= count, deliveredWithin(count, cap * 1000 / answerAfterMs));
  // Each request is open from its arrival until its answer, answerAfterMs later.
  const arrivals = receiver.receipts(path).map((r) => r.receivedAt).sort((a, b) => a - b);
  const open = Math.max(...arrivals.map((at) => arrivals.filter((other) => other <= at && other + answerAfterMs > at).length));
  assert.ok(open <= cap, `${open} requests were open at once (cap ${cap})`);
  await assertHealthy(hook);
});

test('an ordered webhook with a limit delivers each item\'s events in order; a filtered one creates nothing for what its filter refuses', async () => {
  const ordered = await subscribe('/ordered', { events: ['item.created', 'item.updated'], ordered: true, rateLimit: { perSecond: 50 } });
  const tries = new Map<string, number>();
  receiver.script('/ordered', (receipt) => {
    const n = (tries.get(receipt.event.id) ?? 0) + 1;
    tries.set(receipt.event.id, n);
    return n === 1 && Math.random() < 0.3 ? { status: 500 } : { status: 200 };
  });
  const filtered = await subscribe('/filtered', { filter: { field: 'data.keep', equals: true }, rateLimit: { perSecond: 50 } });

  const ids = Array.from({ length: 5 }, (_, i) => `ORD-${i}`);
  const versions = 4;
  await Promise.all(ids.map(async (id) => {
    for (let v = 1; v <= versions; v += 1) expectData(await api.upsertItem({ externalSystem: 'erp', externalId: id, name: `${id} v${v}` }, opts()), v === 1 ? 201 : 200);
  }));
  await emit(40, 'FILTER', (i) => ({ keep: i % 2 === 0 }));

  const versionOf = (r: Receipt) => Number(/ v(\d+)$/.exec(String(r.event.data.name))?.[1]);
  const deliveredOf = (all: Receipt[], id: string) => new Set(all.filter((r) => r.path === '/ordered' && r.event.resourceId === id && r.event.data.name !== undefined).map(versionOf));
  await receiver.waitFor('every version of every item', (all) => ids.every((id) => deliveredOf(all, id).size === versions), deliveredWithin(ids.length * versions * 2, 50));
  for (const id of ids) {
    const seen = receiver.receipts('/ordered').filter((r) => r.event.resourceId === id).map(versionOf);
    assert.deepEqual(seen, [...seen].sort((a, b) => a - b), `${id}: attempts in the order ${seen.join(', ')}`);
  }
  await assertHealthy(ordered);

  await receiver.waitFor('the kept events', (all) => all.filter((r) => r.path === '/filtered').length >= 20, deliveredWithin(20, 50));
  const made = expectData(await api.listWebhookDeliveries(filtered.id, { limit: 100 }, opts()), 200).deliveries;
  assert.equal(made.length, 20, 'only the events the filter accepts made deliveries');
  assert.ok(receiver.receipts('/filtered').every((r) => r.event.data.keep === true));
});
