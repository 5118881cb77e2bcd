// `npm run bench:media`: image ingestion from a local origin, with renditions and without, side by side; then 20 MB images 8 at a time, for the consumer's peak RSS.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import * as api from '../generated/client.ts';
import type { ItemPayload } from '../generated/client.ts';
import { makeImage, startImageOrigin } from '../test/helpers/image-origin.ts';
import { dropDatabase } from '../test/helpers/database.ts';
import { startTestService, testEnv } from '../test/helpers/service.ts';
import type { Tenant } from '../test/helpers/service.ts';
import { SERVICE_PROCESS_ENV } from './service-env.ts';
import { track } from './children.ts';

const ITEMS = 1000;
const IMAGES = 200;
// 190 × 180 RGB noise: incompressible, so each PNG is about 100 KB.
const SIDE = [190, 180] as const;
const TARGET_PER_SECOND = 100;
// 2,560 × 2,560 RGB noise: a PNG of about 19 MB, just under the 20 MB download cap.
const LARGE_SIDE = 2560;
const LARGE_IMAGES = 16;
const LARGE_CONCURRENCY = 8;
const TARGET_PEAK_RSS_MB = 300;

const origin = await startImageOrigin();
const storageDir = mkdtempSync(join(tmpdir(), 'catalog-bench-media-'));
const overrides = { ROLE: 'api', OUTBOUND_ALLOW_PRIVATE: 'true', STORAGE_DIR: storageDir, LOG_LEVEL: 'warn' };
const service = await startTestService(import.meta.filename, overrides);
const sql = new pg.Client({ connectionString: service.databaseUrl });
await sql.connect();

interface Pass {
  readonly name: string;
  /** Environment of its consumers process (MEDIA_RENDITIONS, MEDIA_CONCURRENCY). */
  readonly env: Record<string, string>;
  /** Paths on the origin, each a distinct image (distinct bytes in every pass: renditions are made once per content). */
  readonly paths: string[];
  readonly items: (paths: string[]) => ItemPayload[];
}

interface Figures {
  readonly images: number;
  readonly ingested: number;
  readonly failed: number;
  readonly downloads: number;
  readonly seconds: number;
  readonly consumerSeconds: number;
  readonly cpuMs: number;
  readonly peakRssMb: number;
}

/** user + system CPU of a process, in ms (clock ticks of 10 ms). */
function cpu(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The consumers (relay + media) in a process of their own, so its peak RSS is the consumer's alone. */
function startConsumers(env: Record<string, string>): ChildProcess {
  const profile = process.env.BENCH_CPU_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`] : [];
  return track(spawn(process.execPath, [...profile, 'cli/main.ts', 'serve'], {
    env: {
      ...testEnv(import.meta.filename, service.databaseUrl, { ...overrides, ...SERVICE_PROCESS_ENV, ...env }), ROLE: 'consumers',
      KAFKA_BROKERS: service.kafka.brokers.join(','), KAFKA_TOPIC_PREFIX: service.config.kafkaTopicPrefix,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  }));
}

async function states(tenant: Tenant): Promise<{ done: number; failed: number }> {
  const { rows } = await sql.query(`SELECT count(*) FILTER (WHERE status = 'ingested')::int AS done, count(*) FILTER (WHERE status = 'failed')::int AS failed
    FROM media_assets WHERE catalog_id = $1 AND source_url NOT LIKE '%/warm-up%'`, [tenant.catalogId]);
  return rows[0];
}

async function run(pass: Pass, seed: number): Promise<Figures> {
  const tenant = await service.newTenant({ name: `bench-${pass.name}-${seed}` });
  const opts = { baseUrl: `${service.url}/api/v1/catalog`, headers: { authorization: `Bearer ${tenant.key}` } };
  origin.serve(`/warm-up-${seed}.png`, { body: await makeImage('png', 16, 16, seed) });
  const consumer = startConsumers(pass.env);
  try {
    // Warm-up: the consumer has joined its group and loaded sharp before the clock starts.
    await api.upsertItem({ externalSystem: 'bench', externalId: 'warm-up', name: 'Warm-up', media: [{ url: origin.at(`/warm-up-${seed}.png`) }] }, opts);
    await waitFor(async () => (await sql.query(`SELECT 1 FROM media_assets WHERE catalog_id = $1 AND status = 'ingested'`, [tenant.catalogId])).rowCount === 1, 120_000, 'warm-up image');
    const cpuBefore = cpu(consumer.pid!);
    const answer = await api.bulkUpsertItems({ items: pass.items(pass.paths) }, opts);
    if (answer.status !== 200) throw new Error(`bulk upsert answered ${answer.status}`);
    const upserted = performance.now();
    await waitFor(async () => { const c = await states(tenant); return c.done + c.failed >= pass.paths.length; }, 600_000, `${pass.name}: all images`);
    // From the upsert's answer: the jobs are committed then; what follows is relay, Kafka and the consumer.
    const seconds = (performance.now() - upserted) / 1000;
    const { done, failed } = await states(tenant);
    const { rows: [span] } = await sql.query(`SELECT extract(epoch FROM max(last_checked_at) - min(last_checked_at))::float8 AS s
      FROM media_assets WHERE catalog_id = $1 AND source_url NOT LIKE '%/warm-up%'`, [tenant.catalogId]);
    return {
      images: pass.paths.length, ingested: done, failed, downloads: pass.paths.reduce((sum, path) => sum + origin.gets(path), 0),
      seconds, consumerSeconds: span.s, cpuMs: cpu(consumer.pid!) - cpuBefore, peakRssMb: peakRssMb(consumer.pid!),
    };
  } finally {
    consumer.kill('SIGTERM');
    await new Promise((resolve) => consumer.once('exit', resolve));
  }
}

/** Each item names two images, the second through a tracking-parameter variant: 2,000 references, 200 assets. */
const feedItems = (paths: string[]): ItemPayload[] => Array.from({ length: ITEMS }, (_, i) => ({
  externalSystem: 'bench', externalId: `item-${i}`, name: `Bench item ${i}`, price: i,
  media: [
    { url: origin.at(paths[i % paths.length]!), role: 'primary', sortOrder: 0 },
    { url: `${origin.at(paths[(i * 7 + 3) % paths.length]!)}?utm_source=bench&utm_medium=feed`, role: 'gallery', sortOrder: 1 },
  ],
}));

async function serveSet(name: string, count: number, make: (i: number) => Promise<Buffer>): Promise<string[]> {
  const paths: string[] = [];
  for (let i = 0; i < count; i++) {
    const path = `/bench/${name}/${i}.png`;
    origin.serve(path, { body: await make(i) });
    paths.push(path);
  }
  return paths;
}

const concurrency: Record<string, string> = process.env.MEDIA_CONCURRENCY ? { MEDIA_CONCURRENCY: process.env.MEDIA_CONCURRENCY } : {};
const smallBytes = (await makeImage('png', SIDE[0], SIDE[1], 1)).length;
const passes: Pass[] = [
  { name: 'renditions on', env: { ...concurrency }, paths: await serveSet('on', IMAGES, (i) => makeImage('png', SIDE[0], SIDE[1], 1000 + i)), items: feedItems },
  { name: 'renditions off', env: { ...concurrency, MEDIA_RENDITIONS: '' }, paths: await serveSet('off', IMAGES, (i) => makeImage('png', SIDE[0], SIDE[1], 2000 + i)), items: feedItems },
];
const large: Pass = {
  name: `${LARGE_IMAGES} × 20 MB, ${LARGE_CONCURRENCY} at a time`, env: { MEDIA_CONCURRENCY: String(LARGE_CONCURRENCY), MEDIA_HOST_CONCURRENCY: String(LARGE_CONCURRENCY) },
  paths: await serveSet('large', LARGE_IMAGES, (i) => makeImage('png', LARGE_SIDE, LARGE_SIDE, 3000 + i)),
  items: (paths) => paths.map((path, i) => ({ externalSystem: 'bench', externalId: `large-${i}`, name: `Large ${i}`, media: [{ url: origin.at(path) }] })),
};
const largeBytes = (await makeImage('png', LARGE_SIDE, LARGE_SIDE, 3000)).length;

try {
  const results: Array<[Pass, Figures]> = [];
  for (const [n, pass] of [...passes, large].entries()) results.push([pass, await run(pass, n + 1)]);
  const column = (f: Figures) => [
    `${f.ingested} / ${f.failed}`, `${f.downloads}`, `${(f.ingested / f.seconds).toFixed(1)}`, `${((f.ingested - 1) / f.consumerSeconds).toFixed(1)}`,
    `${(f.cpuMs / f.images).toFixed(1)}`, `${f.peakRssMb.toFixed(0)}`,
  ];
  const rows = ['ingested / failed', 'downloads (must equal images)', 'images/s end to end', 'images/s in the consumer', 'consumer CPU ms per image', 'consumer peak RSS MB'];
  const columns = results.map(([, f]) => column(f));
  const width = Math.max(...rows.map((r) => r.length));
  console.log([
    `images: ${IMAGES} distinct ~${Math.round(smallBytes / 1024)} KB PNGs named by ${ITEMS} items (2 each, one through tracking parameters); then ${LARGE_IMAGES} × ${(largeBytes / 1e6).toFixed(1)} MB PNGs`,
    `${''.padEnd(width)}  ${results.map(([p]) => p.name.padStart(24)).join('')}`,
    ...rows.map((row, r) => `${row.padEnd(width)}  ${columns.map((c) => c[r]!.padStart(24)).join('')}`),
    `targets: ≥ ${TARGET_PER_SECOND} images/s end to end with renditions; peak RSS ≤ ${TARGET_PEAK_RSS_MB} MB with the 20 MB images`,
    `load average (1 min): ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores; consumers with MALLOC_ARENA_MAX=${SERVICE_PROCESS_ENV.MALLOC_ARENA_MAX} (as npm start and the image)`,
  ].join('\n'));
  process.exitCode = results.every(([, f]) => f.downloads === f.images && f.ingested === f.images) ? 0 : 1;
} finally {
  await sql.end();
  await service.close();
  await dropDatabase(service.databaseUrl);
  await origin.close();
}
