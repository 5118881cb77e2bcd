// `npm run bench:relay`: how fast the outbox reaches Kafka with one relay process and with three, side by side in one run.
//
// The outbox is filled once with item events of many catalogs (each with its changelog record,
// as an import writes them), then published again from the start for each fleet size, rounds
// alternating which size goes first. The figure is the time from the rows becoming unsent to the
// last one marked sent, with the relays already running and their lanes shared out.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { domainEvent, eventRow, itemEventKey, writeOutbox } from '../domain/events/outbox.ts';
import { LANE_LOCK_SPACE } from '../consumers/relay/lanes.ts';
import { loadConfig } from '../platform/config/config.ts';
import { query } from '../platform/db/sql.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { createKafkaClient } from '../platform/kafka/client.ts';
import { allTopicNames } from '../platform/kafka/topics.ts';
import { createLogger } from '../platform/log/logger.ts';
import { ensureKafka } from '../scripts/kafka.ts';
import { dropBenchDatabase, freshBenchDatabase } from './database.ts';
import { benchLine } from './import-lines.ts';
import { SERVICE_PROCESS_ENV } from './service-env.ts';
import { track } from './children.ts';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000);
const CATALOGS = 64;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SIZES = [1, 3];
const logger = createLogger('warn');
const adminUrl = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const brokers = process.env.KAFKA_BROKERS?.split(',') ?? (await ensureKafka({ dataDir: resolve('.data') })).brokers;
const prefix = `bench-relay.${Date.now().toString(36)}.`;
const DB_NAME = 'catalog_bench_relay';
const databaseUrl = await freshBenchDatabase(adminUrl, DB_NAME);
const orm = await openDatabase({ databaseUrl, logger, poolSize: 2 });
const db = orm.em.fork();
const env = { ...process.env, ...SERVICE_PROCESS_ENV, DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: prefix, LOG_LEVEL: 'warn' };
const kafka = await createKafkaClient(loadConfig(env), logger, { topicPrefix: prefix });
await kafka.ensureTopics();

// The outbox as imports of many catalogs leave it: transactions of 100 item events of one catalog.
const catalogs = Array.from({ length: CATALOGS }, () => randomUUID());
for (let at = 0; at < EVENTS; at += 100) {
  const catalogId = catalogs[(at / 100) % CATALOGS]!;
  const rows = Array.from({ length: Math.min(100, EVENTS - at) }, (_, i) => {
    const data = { ...JSON.parse(benchLine(at + i)), serviceId: randomUUID(), contentHash: 'c'.repeat(64) };
    return eventRow(domainEvent({ type: 'item.created', catalogId, resourceId: data.externalId, data }), itemEventKey(catalogId, 'erp', data.externalId));
  });
  await db.transactional((tx) => writeOutbox(tx, rows, { notify: false }));
}
// Their changelog records travel with them (the relay makes one per item event): twice as many Kafka records.
process.stdout.write(`${EVENTS} item events of ${CATALOGS} catalogs in the outbox\n`);

const count = async (sql: string, params: unknown[] = []) => Number((await query<{ n: string }>(db, sql, params))[0]!.n);

async function startRelays(size: number): Promise<ChildProcess[]> {
  const children = Array.from({ length: size }, () => track(spawn(process.execPath, ['bench/relay-process.ts'], { env, stdio: ['ignore', 'pipe', 'inherit'] })));
  await Promise.all(children.map((child) => new Promise<void>((ready, fail) => {
    child.stdout!.on('data', (chunk: Buffer) => { if (chunk.toString().includes('ready')) ready(); });
    child.once('exit', (code) => fail(new Error(`a relay exited with ${code}`)));
  })));
  // Until every relay holds its share of the lanes.
  for (;;) {
    const holders = await count(`SELECT count(DISTINCT pid) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted
      AND classid = $1::int4::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, [LANE_LOCK_SPACE]);
    if (holders === size) return children;
    await new Promise((wait) => setTimeout(wait, 200));
  }
}

/** Publishes the whole outbox again with `size` relays; events a second. */
async function run(size: number): Promise<number> {
  const children = await startRelays(size);
  try {
    const started = performance.now();
    await query(db, `WITH unsent AS (UPDATE outbox SET sent_at = NULL RETURNING 1) SELECT pg_notify('outbox', '') FROM (SELECT 1 FROM unsent LIMIT 1) AS any_row`);
    while (await count('SELECT count(*) AS n FROM outbox WHERE sent_at IS NULL') > 0) await new Promise((wait) => setTimeout(wait, 50));
    return EVENTS / ((performance.now() - started) / 1000);
  } finally {
    await Promise.all(children.map((child) => new Promise((exited) => { child.once('exit', exited); child.kill('SIGTERM'); })));
  }
}

const results = new Map<number, number[]>(SIZES.map((size) => [size, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const size of round % 2 === 0 ? SIZES : [...SIZES].reverse()) {
    const rate = await run(size);
    results.get(size)!.push(rate);
    process.stdout.write(`round ${round + 1}, ${size} relay process${size === 1 ? '' : 'es'}: ${Math.round(rate).toLocaleString('en')} events/s\n`);
  }
}
const one = results.get(1)!;
for (const size of SIZES) {
  const rates = results.get(size)!;
  process.stdout.write(`${size} relay process${size === 1 ? '' : 'es'}: ${rates.map((r) => Math.round(r).toLocaleString('en')).join(' / ')} events/s`
    + ` (each with its changelog record)${size === 1 ? '' : `, ${rates.map((r, i) => `${(r / one[i]!).toFixed(2)}×`).join(' / ')} of one`}\n`);
}
await kafka.withAdmin((admin) => admin.deleteTopics({ topics: allTopicNames(prefix) })).catch(() => undefined);
await kafka.disconnect();
await orm.close();
await dropBenchDatabase(adminUrl, DB_NAME);
