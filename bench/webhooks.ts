// `npm run bench:webhooks`: events fanned out to 4 webhooks on a local receiver; deliveries/s and commit-to-receipt latency.
//
// Real pieces only: Postgres, the Kafka broker, a consumers process (`catalog serve --role
// consumers`: relay, fan-out, dispatcher) and an HTTP receiver in this process that checks
// signatures. Events are committed to the outbox at a steady rate (--rate events/s, 0 = all at
// once); latency is from each event's commit to its receipt by each webhook.
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createCatalog } from '../domain/access/catalogs.ts';
import { domainEvent, eventRow, writeOutbox } from '../domain/events/outbox.ts';
import { createWebhook } from '../domain/webhooks/subscriptions.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { createKafkaClient } from '../platform/kafka/client.ts';
import { allTopicNames } from '../platform/kafka/topics.ts';
import { loadConfig } from '../platform/config/config.ts';
import { createLogger } from '../platform/log/logger.ts';
import { ensureKafka } from '../scripts/kafka.ts';
import { dropBenchDatabase, freshBenchDatabase } from './database.ts';
import { SERVICE_PROCESS_ENV } from './service-env.ts';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    webhooks: { type: 'string', default: '4' },
    rate: { type: 'string', default: '400' },
    batch: { type: 'string', default: '20' },
    timeline: { type: 'boolean', default: false },
  },
});
const EVENTS = Number(args.events);
const WEBHOOKS = Number(args.webhooks);
const RATE = Number(args.rate);
const BATCH = Number(args.batch);
const TOTAL = EVENTS * WEBHOOKS;

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
const done = new Promise<void>((resolveDone) => { allReceived = resolveDone; });
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
      if (latencies.length === TOTAL) allReceived();
    }
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

// One catalog, N webhooks subscribed to everything.
const em = orm.em.fork();
const catalog = await createCatalog(em, { name: 'bench', ownerEmail: 'bench@merchant.example' });
for (let i = 0; i < WEBHOOKS; i++) {
  const hook = await createWebhook(em, { allowHttp: true, allowPrivate: true }, catalog.id, { url: `${base}/hook-${i}`, events: ['*'] });
  secrets.set(`/hook-${i}`, hook.secret);
}

// The consumers process, as deployed.
const env = {
  ...process.env, ...SERVICE_PROCESS_ENV, ROLE: 'consumers', PORT: '0', DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokers.join(','),
  KAFKA_TOPIC_PREFIX: prefix, LOG_LEVEL: 'info', WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_PRIVATE: 'true',
  DATA_DIR: mkdtempSync(join(tmpdir(), 'catalog-bench-')), SIGNING_SECRET: 'bench-signing-secret-0123456789abcdef0123456789',
};
const worker = spawn(process.execPath, [...(process.env.BENCH_CHILD_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []), 'cli/main.ts', 'serve', '--role', 'consumers'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
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
    type: 'item.updated', catalogId: catalog.id, resourceId: `${label}-${i}`,
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
const warmup = Math.max(200, (RATE || 400) * 3);
for (let sent = 0, n = 0; sent < warmup; sent += BATCH, n++) {
  await commitEvents(BATCH, `warmup${n}`);
  await new Promise((r) => setTimeout(r, (BATCH / (RATE || 400)) * 1000));
}
while (received.size < Math.ceil(warmup / BATCH) * BATCH * WEBHOOKS) await new Promise((r) => setTimeout(r, 50));
commitAt.clear();
received.clear();
receivedEvents.clear();
latencies.length = 0;
samples.length = 0;
duplicates = 0;

process.stdout.write(`${EVENTS} events × ${WEBHOOKS} webhooks = ${TOTAL} deliveries; rate ${RATE === 0 ? 'burst' : `${RATE} events/s (${RATE * WEBHOOKS} deliveries/s offered)`}, ${BATCH} events per transaction\n`);
const started = Date.now();
for (let sent = 0, n = 0; sent < EVENTS; n++) {
  const count = Math.min(BATCH, EVENTS - sent);
  await commitEvents(count, `e${n}`);
  sent += count;
  if (RATE > 0) {
    const due = started + (sent / RATE) * 1000;
    if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
  }
}
const committedIn = Date.now() - started;
// Gives up when nothing new arrived for 30 s (the summary then shows what is missing).
let lastCount = -1;
const watchdog = setInterval(() => {
  if (latencies.length === lastCount) allReceived();
  lastCount = latencies.length;
}, 30_000);
await done;
clearInterval(watchdog);

const sorted = latencies.sort((a, b) => a - b);
const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const seconds = (lastReceipt - started) / 1000;
process.stdout.write([
  `committed ${EVENTS} events in ${(committedIn / 1000).toFixed(1)} s`,
  `delivered ${latencies.length}/${TOTAL} in ${seconds.toFixed(1)} s: ${Math.round(latencies.length / seconds)} deliveries/s`,
  `commit-to-receipt latency: p50 ${pct(50)} ms, p90 ${pct(90)} ms, p99 ${pct(99)} ms, max ${sorted.at(-1)} ms`,
  `duplicates ${duplicates}, bad signatures ${badSignatures}`,
  '',
].join('\n'));
if (args.timeline) {
  // Per 5 s of receipts: how many, and the worst latency among them (where a stall happened).
  const windows = new Map<number, { n: number; max: number }>();
  for (const [at, latency] of samples) {
    const w = Math.floor((at - started) / 5000);
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
process.exitCode = latencies.length === TOTAL && badSignatures === 0 ? 0 : 1;
