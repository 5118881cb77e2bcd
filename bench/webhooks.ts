// `npm run bench:webhooks`: events fanned out to 4 webhooks on a local receiver; the highest rate delivered with commit-to-receipt p99 ≤ 100 ms, and CPU per delivery.
//
// Real pieces only: Postgres, the Kafka broker, a consumers process (`catalog serve --role
// consumers`: relay, fan-out, dispatcher) and an HTTP receiver in this process that checks
// signatures. Events are committed to the outbox at a steady rate, in steps of rising rates until
// p99 passes 100 ms (or at --rate events/s alone, 0 = all at once); latency is from each event's
// commit to its receipt by each webhook. With --paced N, each webhook has a rate limit of N/s and
// every event is committed at once: the set rate is printed beside the one each webhook received.
import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createCatalog } from '../domain/access/catalogs.ts';
import { domainEvent, eventRow, writeOutbox } from '../domain/events/outbox.ts';
import { createWebhook } from '../domain/webhooks/subscriptions.ts';
import { createSecretBox, secretKey } from '../platform/crypto/secret-box.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { createKafkaClient } from '../platform/kafka/client.ts';
import { allTopicNames } from '../platform/kafka/topics.ts';
import { loadConfig } from '../platform/config/config.ts';
import { createLogger } from '../platform/log/logger.ts';
import { ensureKafka } from '../scripts/kafka.ts';
import { cpuPerUnit, cpuSnapshot } from './cpu.ts';
import { dropBenchDatabase, freshBenchDatabase } from './database.ts';
import { SERVICE_PROCESS_ENV } from './service-env.ts';
import { cliActor } from '../platform/actor.ts';
import { track } from './children.ts';
import { pacedRates } from './webhooks-paced.ts';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    webhooks: { type: 'string', default: '4' },
    rate: { type: 'string' },
    batch: { type: 'string', default: '20' },
    timeline: { type: 'boolean', default: false },
    // Webhooks delivering in order per resource; with a filter that accepts every event; events spread over N resources (0: one each).
    ordered: { type: 'boolean', default: false },
    filter: { type: 'boolean', default: false },
    resources: { type: 'string', default: '0' },
    modes: { type: 'boolean', default: false },
    // Each webhook paced at N deliveries/s (its rateLimit); the events committed at once; the set rate beside the achieved one.
    paced: { type: 'string' },
  },
});
// --modes: unordered, filtered and ordered runs side by side (bench/webhooks-modes.ts).
if (args.modes) process.exit(await (await import('./webhooks-modes.ts')).compareModes());
const RESOURCES = Number(args.resources);
let eventCount = 0;
const EVENTS = Number(args.events);
const WEBHOOKS = Number(args.webhooks);
// Without --rate, the highest rate kept up with is searched for, from START_RATE events/s.
const PACED = args.paced === undefined ? undefined : Number(args.paced);
const RATE = PACED !== undefined ? 0 : args.rate === undefined ? undefined : Number(args.rate);
const BATCH = Number(args.batch);
const P99_BOUND_MS = 100;
const START_RATE = 500;
const STEP_SECONDS = 8;
let total = EVENTS * WEBHOOKS;
let failed = false;

const logger = createLogger('warn');
const adminUrl = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const brokers = process.env.KAFKA_BROKERS?.split(',') ?? (await ensureKafka({ dataDir: resolve('.data') })).brokers;
const prefix = `bench.${Date.now().toString(36)}.`;

// A fresh database each run.
const databaseUrl = await freshBenchDatabase(adminUrl, 'catalog_bench_webhooks');
const orm = await openDatabase({ databaseUrl, logger, poolSize: 4 });

// The receiver: records the first receipt of each (webhook, event); checks every signature.
const commitAt = new Map<string, number>();
const received = new Map<string, number>();
const receivedEvents = new Set<string>();
const latencies: number[] = [];
// [receipt time, latency] of every first receipt, for the per-5-s timeline.
const samples: Array<[number, number]> = [];
let duplicates = 0;
let badSignatures = 0;
let firstReceipt = 0;
let lastReceipt = 0;
const secrets = new Map<string, string>();
let allReceived: () => void = () => undefined;
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const now = Date.now();
    const body = Buffer.concat(chunks);
    const path = req.url ?? '';
    const header = String(req.headers['x-service-signature'] ?? '');
    const [t, v1] = header.split(',').map((p) => p.slice(p.indexOf('=') + 1));
    if (createHmac('sha256', secrets.get(path) ?? '').update(`${t}.`).update(body).digest('hex') !== v1) badSignatures += 1;
    const eventId = String(req.headers['x-service-event-id']);
    const key = `${path} ${eventId}`;
    if (received.has(key)) duplicates += 1;
    else {
      received.set(key, now);
      receivedEvents.add(eventId);
      const committed = commitAt.get(eventId);
      if (committed !== undefined) {
        latencies.push(now - committed);
        samples.push([now, now - committed]);
        firstReceipt ||= now;
        lastReceipt = now;
      }
      if (latencies.length === total) allReceived();
    }
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

// One catalog, N webhooks subscribed to everything, their secrets sealed with the key the consumers process is given.
const secretsKey = randomBytes(32);
const box = createSecretBox({ current: secretKey(secretsKey) });
const em = orm.em.fork();
const catalog = await createCatalog(em, { name: 'bench', ownerEmail: 'bench@merchant.example' }, cliActor());
for (let i = 0; i < WEBHOOKS; i++) {
  const hook = await createWebhook(em, box, { allowHttp: true, allowPrivate: true }, catalog.id, { url: `${base}/hook-${i}`, events: ['*'], ordered: args.ordered,
    ...(PACED === undefined ? {} : { rateLimit: { perSecond: PACED } }),
    ...(args.filter ? { filter: { all: [{ field: 'type', equals: 'item.updated' }, { field: 'data.contentHash', exists: true }, { not: { field: 'data.sku', in: ['x', 'y'] } }] } } : {}) }, cliActor());
  secrets.set(`/hook-${i}`, hook.secret);
}

// The consumers process, as deployed.
const env = {
  ...process.env, ...SERVICE_PROCESS_ENV, ROLE: 'consumers', PORT: '0', OPS_PORT: '0', DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokers.join(','),
  KAFKA_TOPIC_PREFIX: prefix, LOG_LEVEL: 'info', WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_PRIVATE: 'true',
  DATA_DIR: mkdtempSync(join(tmpdir(), 'catalog-bench-')), SIGNING_SECRET: 'bench-signing-secret-0123456789abcdef0123456789',
  SECRETS_KEY: secretsKey.toString('base64'),
};
const worker = track(spawn(process.execPath, [...(process.env.BENCH_CHILD_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []), 'cli/main.ts', 'serve', '--role', 'consumers'], { env, stdio: ['ignore', 'pipe', 'inherit'] }));
await new Promise<void>((ready, fail) => {
  let output = '';
  worker.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (output.includes('catalog consumers running')) ready();
  });
  worker.once('exit', (code) => fail(new Error(`the consumers process exited with ${code}`)));
});

async function commitEvents(count: number, label: string): Promise<void> {
  const events = Array.from({ length: count }, (_, i) => domainEvent({
    type: 'item.updated', catalogId: catalog.id, resourceId: RESOURCES > 0 ? `r${eventCount++ % RESOURCES}` : `${label}-${i}`,
    data: { externalId: `${label}-${i}`, externalSystem: 'bench', serviceId: crypto.randomUUID(), sku: `SKU-${label}-${i}`, contentHash: 'f'.repeat(64) },
  }));
  await orm.em.fork().transactional(async (tx) => {
    await writeOutbox(tx, events.map((event) => eventRow(event)));
    // A receipt handled before the COMMIT callback runs (a busy event loop) still finds a time.
    const sending = Date.now();
    for (const event of events) commitAt.set(event.id, sending);
  });
  const now = Date.now();
  for (const event of events) if (!receivedEvents.has(event.id)) commitAt.set(event.id, now);
}

// Warm-up outside the measurement: the fan-out group, connection pools, the JIT (3 s of traffic).
const warmupRate = RATE || START_RATE;
const warmup = Math.max(200, warmupRate * 3);
for (let sent = 0, n = 0; sent < warmup; sent += BATCH, n++) {
  await commitEvents(BATCH, `warmup${n}`);
  await new Promise((r) => setTimeout(r, (BATCH / warmupRate) * 1000));
}
while (received.size < Math.ceil(warmup / BATCH) * BATCH * WEBHOOKS) await new Promise((r) => setTimeout(r, 50));

interface Step {
  readonly rate: number;
  readonly events: number;
  readonly delivered: number;
  readonly deliveriesPerSecond: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  /** CPU µs per delivery, by process group. */
  readonly cpu: Map<string, number>;
  readonly sustained: boolean;
}

/** One rate: `events` committed at `rate` events/s (0: at once), then every delivery awaited. */
async function step(rate: number, events: number, label: string): Promise<Step> {
  commitAt.clear();
  received.clear();
  receivedEvents.clear();
  latencies.length = 0;
  samples.length = 0;
  duplicates = 0;
  total = events * WEBHOOKS;
  const done = new Promise<void>((resolveDone) => { allReceived = resolveDone; });
  const before = cpuSnapshot(roles);
  const started = Date.now();
  for (let sent = 0, n = 0; sent < events; n++) {
    const count = Math.min(BATCH, events - sent);
    await commitEvents(count, `${label}-${n}`);
    sent += count;
    if (rate > 0) {
      const due = started + (sent / rate) * 1000;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    }
  }
  // Gives up when nothing new arrived for 30 s (the figures then show what is missing).
  let lastCount = -1;
  const watchdog = setInterval(() => {
    if (latencies.length === lastCount) allReceived();
    lastCount = latencies.length;
  }, 30_000);
  await done;
  clearInterval(watchdog);
  const after = cpuSnapshot(roles);
  const sorted = latencies.sort((a, b) => a - b);
  const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
  const seconds = (lastReceipt - started) / 1000;
  const deliveriesPerSecond = latencies.length / seconds;
  const p99 = pct(99);
  return {
    rate, events, delivered: latencies.length, deliveriesPerSecond, p50: pct(50), p90: pct(90), p99, max: sorted.at(-1) ?? NaN,
    cpu: cpuPerUnit(before, after, Math.max(1, latencies.length)),
    // Kept up: everything arrived, at the pace offered, and the slowest 1 % within the bound.
    sustained: latencies.length === total && p99 <= P99_BOUND_MS && (rate === 0 || deliveriesPerSecond >= 0.95 * rate * WEBHOOKS),
  };
}

const cpuText = (cpu: Map<string, number>) =>
  `${[...cpu].filter(([, us]) => us > 0).map(([group, us]) => `${group} ${Math.round(us)}`).join(', ')}: ${Math.round([...cpu.values()].reduce((a, b) => a + b, 0))} µs`;
const stepText = (s: Step) => `${s.rate * WEBHOOKS} offered → ${Math.round(s.deliveriesPerSecond)} deliveries/s, `
  + `p50 ${s.p50} ms, p99 ${s.p99} ms, max ${s.max} ms, ${s.delivered}/${s.events * WEBHOOKS} delivered; CPU a delivery ${cpuText(s.cpu)}`;

const roles = new Map([['consumers', worker.pid!], ['this script', process.pid]]);
const timelineStart = Date.now();
if (PACED !== undefined) {
  // Every event at once; each webhook's deliveries arrive at its pace, whatever the backlog.
  process.stdout.write(`${EVENTS} events × ${WEBHOOKS} webhooks = ${EVENTS * WEBHOOKS} deliveries, committed at once; each webhook paced at ${PACED} deliveries/s\n`);
  const result = await step(0, EVENTS, 'p');
  const { lines, rates } = pacedRates(received, PACED);
  for (const line of lines) process.stdout.write(`${line}\n`);
  process.stdout.write(`paced: set ${PACED} deliveries/s a webhook, achieved ${Math.min(...rates).toFixed(1)}–${Math.max(...rates).toFixed(1)}; `
    + `${result.delivered}/${result.events * WEBHOOKS} delivered; CPU a delivery ${cpuText(result.cpu)}\nduplicates ${duplicates}, bad signatures ${badSignatures}\n`);
  failed ||= result.delivered !== result.events * WEBHOOKS;
} else if (RATE !== undefined) {
  // One rate, as asked.
  process.stdout.write(`${EVENTS} events × ${WEBHOOKS} webhooks = ${EVENTS * WEBHOOKS} deliveries; rate ${RATE === 0 ? 'burst' : `${RATE} events/s (${RATE * WEBHOOKS} deliveries/s offered)`}, ${BATCH} events per transaction\n`);
  const result = await step(RATE, EVENTS, 'e');
  process.stdout.write(`${stepText(result)}\nduplicates ${duplicates}, bad signatures ${badSignatures}\n`);
  failed ||= result.delivered !== result.events * WEBHOOKS;
} else {
  // The highest rate kept up with: up by a quarter while it holds, then halve the gap twice.
  process.stdout.write(`finding the highest rate delivered with commit-to-receipt p99 ≤ ${P99_BOUND_MS} ms: ${WEBHOOKS} webhooks, ${STEP_SECONDS} s of events a step, ${BATCH} events per transaction\n`);
  let good: Step | undefined;
  let bad: Step | undefined;
  let rate = START_RATE;
  for (let n = 0; n < 12; n++) {
    const result = await step(rate, Math.round(rate * STEP_SECONDS), `s${n}`);
    process.stdout.write(`  ${result.sustained ? 'kept up ' : 'fell behind'} ${stepText(result)}\n`);
    failed ||= result.delivered !== result.events * WEBHOOKS;
    if (result.sustained) good = result;
    else bad = result;
    if (!bad) rate = Math.round(rate * 1.25);
    else if (!good) rate = Math.round(rate / 2);
    else if (bad.rate - good.rate > good.rate / 10) rate = Math.round((good.rate + bad.rate) / 2);
    else break;
  }
  process.stdout.write(good
    ? `highest sustained: ${Math.round(good.deliveriesPerSecond)} deliveries/s (${good.rate * WEBHOOKS} offered), p99 ${good.p99} ms; CPU a delivery ${cpuText(good.cpu)}\n`
    : `no rate kept up, down to ${rate * WEBHOOKS} deliveries/s offered\n`);
  process.stdout.write(`target: ≥ 10,000 deliveries/s with p99 ≤ ${P99_BOUND_MS} ms; duplicates ${duplicates}, bad signatures ${badSignatures}\n`);
}
if (args.timeline) {
  // Per 5 s of receipts of the last step: how many, and the worst latency among them (where a stall happened).
  const windows = new Map<number, { n: number; max: number }>();
  for (const [at, latency] of samples) {
    const w = Math.floor((at - timelineStart) / 5000);
    const cur = windows.get(w) ?? { n: 0, max: 0 };
    windows.set(w, { n: cur.n + 1, max: Math.max(cur.max, latency) });
  }
  for (const [w, { n, max }] of [...windows].sort((a, b) => a[0] - b[0])) process.stdout.write(`  ${w * 5}-${w * 5 + 5} s: ${n} receipts, max ${max} ms\n`);
}

let workerLog = '';
worker.stdout!.on('data', (chunk: Buffer) => { workerLog += chunk.toString(); });
worker.kill('SIGTERM');
await new Promise((r) => worker.once('exit', r));
if (process.env.BENCH_DEBUG) {
  for (const line of workerLog.split('\n').filter((l) => /stopped/.test(l))) process.stdout.write(`${line}\n`);
}
const kafka = await createKafkaClient(loadConfig({ ...process.env, KAFKA_BROKERS: brokers.join(','), LOG_LEVEL: 'warn' }), logger, { topicPrefix: prefix });
await kafka.withAdmin((a) => a.deleteTopics({ topics: allTopicNames(prefix) })).catch(() => undefined);
await kafka.disconnect();
await orm.close();
await dropBenchDatabase(adminUrl, 'catalog_bench_webhooks');
server.closeAllConnections();
server.close();
process.exitCode = !failed && badSignatures === 0 ? 0 : 1;
