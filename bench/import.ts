// `npm run bench:import`: 200,000 lines through the real import flow (HTTP, storage, Kafka, consumer), fresh and unchanged, against a Postgres COPY of the same rows; then a realistic file (images, bad lines) beside the clean one.
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { RequestOpts } from '@oazapfts/runtime';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { v7 as uuidv7 } from 'uuid';
import * as api from '../generated/client.ts';
import type { ImportJob } from '../generated/client.ts';
import { normalizeItem } from '../domain/items/payload.ts';
import type { NormalizedItem } from '../domain/items/normalized-item.ts';
import { ensureKafka } from '../scripts/kafka.ts';
import { budgetPerLine, cpuPerLine, cpuPerUnit, cpuSnapshot } from './cpu.ts';
import type { CpuSnapshot } from './cpu.ts';
import { dropBenchDatabase, freshBenchDatabase } from './database.ts';
import { benchLine } from './import-lines.ts';
import { IMAGES, imageOriginForBench, mediaState, writeRealisticFile } from './import-realistic.ts';
import { silenceKafkajsTimerWarning } from '../platform/kafka/kafkajs-quirks.ts';
import { TOPICS, allTopicNames, topicName } from '../platform/kafka/topics.ts';
import { SERVICE_PROCESS_ENV } from './service-env.ts';
import { requireFreePort, track } from './children.ts';

const LINES = Number(process.env.BENCH_LINES ?? 200_000);
// Lines naming images are longer, and their import slower: 200,000 of them would pass the 100 MiB upload cap.
const REAL_LINES = Number(process.env.BENCH_REALISTIC_LINES ?? Math.min(LINES, 20_000));
const ADMIN_URL = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DB_NAME = process.env.BENCH_DB_NAME ?? 'catalog_bench_import';
const PORT = Number(process.env.BENCH_PORT ?? 18_091);
const work = mkdtempSync(join(tmpdir(), 'catalog-bench-'));
// This run's own topics, deleted at the end: the broker is shared with other runs.
const TOPIC_PREFIX = `bench-import.${Date.now().toString(36)}.`;
let brokerList: string[] = [];
const children: ChildProcess[] = [];
const log = (line: string) => process.stderr.write(`${line}\n`);

async function writeFile(path: string): Promise<number> {
  await pipeline(Readable.from((function* () { for (let i = 0; i < LINES; i += 1) yield `${benchLine(i)}\n`; })()), createWriteStream(path));
  return statSync(path).size;
}

function serve(role: 'api' | 'consumers', env: NodeJS.ProcessEnv): ChildProcess {
  const child = track(spawn(process.execPath, ['cli/main.ts', 'serve', '--role', role], { env: { ...env, ...SERVICE_PROCESS_ENV }, stdio: ['ignore', 'ignore', 'inherit'] }));
  children.push(child);
  return child;
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** VmHWM (peak resident set) or VmRSS (resident now) of a process, in MB. */
const statusMb = (field: 'VmHWM' | 'VmRSS', pid: number) =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const peakRssMb = (pid: number) => statusMb('VmHWM', pid);
// Both roles started, connected and idle: their consumer groups joined, no request served yet.
const IDLE_SETTLE_MS = 10_000;

/**
 * The relay's pace, read from the broker: the events topic's offsets, summed over its partitions,
 * every 250 ms while an import runs. `stop()` waits until `expected` more events are there (or
 * 60 s pass without one) and gives events/s from the first poll that saw one to the last.
 */
async function watchRelay(expected: number): Promise<{ stop: () => Promise<{ events: number; perSecond: number }> }> {
  silenceKafkajsTimerWarning();
  const admin = new Kafka({ brokers: brokerList, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const topic = topicName(TOPIC_PREFIX, TOPICS.events);
  const total = async () => (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
  const start = await total();
  let last = start;
  let first: number | undefined;
  let lastAt = performance.now();
  let running = true;
  const polling = (async () => {
    // Until stopped; then until the expected events are all there, or none came for 60 s.
    while (running || (last - start < expected && performance.now() - lastAt < 60_000)) {
      await new Promise((r) => setTimeout(r, 250));
      const now = await total();
      if (now > last) {
        first ??= performance.now() - 250;
        last = now;
        lastAt = performance.now();
      }
    }
  })();
  return {
    async stop() {
      running = false;
      await polling;
      await admin.disconnect();
      const seconds = first === undefined ? 0 : (lastAt - first) / 1000;
      return { events: last - start, perSecond: seconds > 0 ? (last - start) / seconds : 0 };
    },
  };
}

async function importOnce(opts: RequestOpts, path: string, size: number) {
  const began = performance.now();
  const created = await api.createImport({ fileSizeBytes: size }, {}, opts);
  if (created.status !== 201) throw new Error(`createImport: ${JSON.stringify(created.data)}`);
  const put = await fetch(created.data.data.uploadUrl, {
    method: 'PUT', headers: { 'content-type': 'application/x-ndjson' }, body: readFileSync(path),
  });
  if (put.status !== 200) throw new Error(`upload: ${put.status} ${await put.text()}`);
  await api.startImport(created.data.data.jobId, opts);
  let job: ImportJob;
  for (;;) {
    const answer = await api.getImport(created.data.data.jobId, opts);
    // A busy machine's database may refuse a connection now and then: poll again.
    if (answer.status >= 500) {
      await new Promise((r) => setTimeout(r, 500));
      continue;
    }
    if (answer.status !== 200) throw new Error(`getImport: ${JSON.stringify(answer.data)}`);
    job = answer.data.data;
    if (['completed', 'completed_with_errors', 'failed', 'cancelled'].includes(job.status)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const seconds = (performance.now() - began) / 1000;
  const processing = (Date.parse(job.finishedAt!) - Date.parse(job.startedAt!)) / 1000;
  return { job, seconds, processing };
}

/**
 * COPY of the same rows (as the import stores them) into a scratch copy of the items table: its
 * time, and Postgres's CPU a row, read while the COPY's backend still runs (an ended process's
 * CPU is not counted).
 */
async function copyBaseline(databaseUrl: string, catalogId: string, roles: Map<string, number>): Promise<{ seconds: number; cpuPerRow: number }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const ids = async (table: string) => new Map((await client.query(`SELECT name_key, id FROM ${table} WHERE catalog_id = $1`, [catalogId])).rows.map((r) => [r.name_key, r.id]));
    const categories = await ids('categories');
    const brands = await ids('brands');
    const csv = (v: unknown) => (v === null ? '' : `"${String(v).replaceAll('"', '""')}"`);
    const rows: string[] = [];
    for (let i = 0; i < LINES; i += 1) {
      const n = normalizeItem(JSON.parse(benchLine(i)));
      if (!n.ok) throw new Error('benchmark line is invalid');
      const it: NormalizedItem = n.item;
      rows.push([uuidv7(), catalogId, it.externalSystem, it.externalId, it.sku, it.name, it.description, it.price, it.cost, it.weight,
        it.gtin13, it.ncm, categories.get(it.category!.name.toLowerCase()) ?? null, brands.get(it.brand!.name.toLowerCase()) ?? null,
        `{${it.tags.map((t) => `"${t}"`).join(',')}}`, JSON.stringify(it.metadata), '[]', it.trackStock, it.contentHash].map(csv).join(','));
    }
    await client.query('DROP TABLE IF EXISTS bench_items_copy');
    await client.query('CREATE TABLE bench_items_copy (LIKE items INCLUDING ALL)');
    const before = cpuSnapshot(roles);
    const began = performance.now();
    await pipeline(Readable.from(rows.map((r) => `${r}\n`)), client.query(copyFrom(
      `COPY bench_items_copy (id, catalog_id, external_system, external_id, sku, name, description, price, cost, weight, gtin13, ncm,
        category_id, brand_id, tags, metadata, media, track_stock, content_hash) FROM STDIN WITH (FORMAT csv)`)));
    const seconds = (performance.now() - began) / 1000;
    const cpuPerRow = cpuPerUnit(before, cpuSnapshot(roles), LINES).get('Postgres') ?? 0;
    await client.query('DROP TABLE bench_items_copy');
    return { seconds, cpuPerRow };
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  await requireFreePort(PORT, 'the service under test (BENCH_PORT)');
  const brokers = process.env.KAFKA_BROKERS ?? (await ensureKafka({ dataDir: resolve('.data') })).brokers.join(',');
  brokerList = brokers.split(',');
  const databaseUrl = await freshBenchDatabase(ADMIN_URL, DB_NAME);
  const env: NodeJS.ProcessEnv = {
    ...process.env, DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokers, KAFKA_TOPIC_PREFIX: TOPIC_PREFIX,
    PORT: String(PORT), HOST: '127.0.0.1', OPS_PORT: '0', STORAGE_DIR: join(work, 'storage'), DATA_DIR: join(work, 'data'),
    SIGNING_SECRET: 'bench-signing-secret-0123456789abcdef01234567', LOG_LEVEL: 'warn',
    // The realistic profile's images are served on loopback; `false` refuses them all at once (the import without image work).
    OUTBOUND_ALLOW_PRIVATE: process.env.OUTBOUND_ALLOW_PRIVATE ?? 'true',
  };
  const cli = (...args: string[]) => execFileSync(process.execPath, ['cli/main.ts', ...args], { env, encoding: 'utf8' }).trim().split('\n').at(-1)!;
  execFileSync(process.execPath, ['cli/main.ts', 'migrate'], { env });
  const catalogId = cli('catalogs', 'create', '--name', 'Bench', '--owner-email', 'bench@example.com');
  const key = cli('keys', 'create', '--catalog', catalogId, '--scopes', 'bulk_import:manage,catalog:read', '--tier', 'enterprise');
  const apiProcess = serve('api', env);
  const consumers = serve('consumers', env);
  const base = `http://127.0.0.1:${PORT}`;
  await waitFor(async () => (await fetch(`${base}/readyz`)).ok, 'the api');
  await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
  const idle = { api: statusMb('VmRSS', apiProcess.pid!), consumers: statusMb('VmRSS', consumers.pid!) };
  const path = join(work, 'bench.jsonl');
  const size = await writeFile(path);
  log(`file: ${LINES} lines, ${(size / 1024 / 1024).toFixed(1)} MB`);
  const opts = { baseUrl: `${base}/api/v1/catalog`, headers: { authorization: `Bearer ${key}` } };

  const roles = new Map([['consumers', consumers.pid!], ['api', apiProcess.pid!], ['this script', process.pid]]);
  const beforeFresh = cpuSnapshot(roles);
  // Every line makes item.created, and the job import.completed.
  const relay = await watchRelay(LINES + 1);
  const fresh = await importOnce(opts, path, size);
  const afterFresh = cpuSnapshot(roles);
  const relayed = await relay.stop();
  const freshRss = peakRssMb(consumers.pid!);
  log(`fresh: ${fresh.job.status} ${JSON.stringify(fresh.job.counts)}`);
  const again = await importOnce(opts, path, size);
  const afterAgain = cpuSnapshot(roles);
  log(`unchanged: ${again.job.status} ${JSON.stringify(again.job.counts)}`);
  const rss = peakRssMb(consumers.pid!);
  const { seconds: copy, cpuPerRow: copyCpu } = await copyBaseline(databaseUrl, catalogId, roles);
  const allCpu = (before: CpuSnapshot, after: CpuSnapshot) => [...cpuPerUnit(before, after, LINES).values()].reduce((a, b) => a + b, 0);

  // The realistic profile, into a catalog of its own: 1–2 of IMAGES images a line from a local origin, 2 % bad lines.
  const origin = await imageOriginForBench();
  const realPath = join(work, 'realistic.jsonl');
  const realSize = await writeRealisticFile(realPath, REAL_LINES, origin);
  const realCatalog = cli('catalogs', 'create', '--name', 'Bench realistic', '--owner-email', 'bench@example.com');
  const realKey = cli('keys', 'create', '--catalog', realCatalog, '--scopes', 'bulk_import:manage,catalog:read', '--tier', 'enterprise');
  const beforeReal = cpuSnapshot(roles);
  const realistic = await importOnce({ ...opts, headers: { authorization: `Bearer ${realKey}` } }, realPath, realSize);
  const afterReal = cpuSnapshot(roles);
  log(`realistic: ${realistic.job.status} ${JSON.stringify(realistic.job.counts)}`);
  // Every image ingested (or failed) with its renditions: the media work the import left behind.
  let media = await mediaState(databaseUrl, realCatalog);
  await waitFor(async () => (media = await mediaState(databaseUrl, realCatalog)).pending === 0 && media.ingested + media.failed > 0, 'the images', 1_800_000);
  const mediaDone = (Date.now() - Date.parse(realistic.job.startedAt!)) / 1000;
  const afterMedia = cpuSnapshot(roles);
  await origin.close();

  const rate = (n: number, s: number) => Math.round(n / s).toLocaleString('en-US');
  const rows = [
    ['fresh import (end to end)', `${fresh.seconds.toFixed(2)} s`, `${rate(LINES, fresh.seconds)} lines/s`],
    ['fresh import (processing)', `${fresh.processing.toFixed(2)} s`, `${rate(LINES, fresh.processing)} lines/s`],
    ['unchanged re-import (end to end)', `${again.seconds.toFixed(2)} s`, `${rate(LINES, again.seconds)} lines/s`],
    ['unchanged re-import (processing)', `${again.processing.toFixed(2)} s`, `${rate(LINES, again.processing)} lines/s`],
    ['Postgres COPY of the same rows', `${copy.toFixed(2)} s`, `${rate(LINES, copy)} rows/s`],
    ['realistic import (end to end)', `${realistic.seconds.toFixed(2)} s`, `${rate(REAL_LINES, realistic.seconds)} lines/s`],
    ['realistic import (processing)', `${realistic.processing.toFixed(2)} s`, `${rate(REAL_LINES, realistic.processing)} lines/s`],
  ];
  for (const [what, time, speed] of rows) console.log(`${what!.padEnd(34)} ${time!.padStart(9)}  ${speed!.padStart(16)}`);
  console.log(`fresh import / COPY                ${(fresh.seconds / copy).toFixed(1)}× the time, ${(allCpu(beforeFresh, afterFresh) / copyCpu).toFixed(1)}× the CPU`);
  console.log(`unchanged re-import / COPY         ${(again.seconds / copy).toFixed(1)}× the time, ${(allCpu(afterFresh, afterAgain) / copyCpu).toFixed(1)}× the CPU`);
  console.log(`CPU per line, fresh import         ${cpuPerLine(beforeFresh, afterFresh, LINES)}`);
  console.log(`CPU per line, unchanged re-import  ${cpuPerLine(afterFresh, afterAgain, LINES)}`);
  console.log(`CPU per row, COPY                  Postgres ${Math.round(copyCpu)} µs`);
  console.log(`realistic / clean (processing)     ${Math.round(((REAL_LINES / realistic.processing) / (LINES / fresh.processing)) * 100)} % of the clean file's lines/s (target ≥ 75 %; ${REAL_LINES} lines naming 1–2 of ${IMAGES} images, 2 % bad)`);
  console.log(`CPU per line, realistic import     ${cpuPerLine(beforeReal, afterReal, REAL_LINES)}`);
  console.log(`CPU per line, its media after it   ${cpuPerLine(afterReal, afterMedia, REAL_LINES)}`);
  console.log(`realistic import's images          ${media.ingested} ingested, ${media.failed} failed, ${media.renditions} renditions, all done ${mediaDone.toFixed(1)} s after the job started`);
  console.log(`relay, fresh import                ${relayed.events.toLocaleString('en-US')} events on ${TOPICS.events}, ${rate(relayed.perSecond, 1)} events/s`);
  console.log(`CPU a line may use at 20,000/s     ${Math.round(budgetPerLine(20_000))} µs (${availableParallelism()} cores)`);
  console.log(`consumer peak RSS                  ${freshRss.toFixed(0)} MB after the fresh import, ${rss.toFixed(0)} MB overall (file ${(size / 1024 / 1024).toFixed(1)} MB)`);
  console.log(`RSS by role, idle / peak           api ${idle.api.toFixed(0)} / ${peakRssMb(apiProcess.pid!).toFixed(0)} MB, consumers ${idle.consumers.toFixed(0)} / ${rss.toFixed(0)} MB`);
}

try {
  await main();
} finally {
  await Promise.all(children.map((child) => new Promise((done) => {
    if (child.exitCode !== null) return done(undefined);
    child.once('exit', done);
    child.kill('SIGTERM');
  })));
  rmSync(work, { recursive: true, force: true });
  await dropBenchDatabase(ADMIN_URL, DB_NAME);
  if (brokerList.length > 0) {
    silenceKafkajsTimerWarning();
    const admin = new Kafka({ brokers: brokerList, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: allTopicNames(TOPIC_PREFIX) }).catch(() => undefined);
    await admin.disconnect();
  }
}
