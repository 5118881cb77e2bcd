// `npm run bench:media`: 1,000 items naming 200 distinct ~100 KB images on a local origin; downloads, images/s and the consumer's peak RSS.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import * as api from '../generated/client.ts';
import type { ItemPayload } from '../generated/client.ts';
import { makeImage, startImageOrigin } from '../test/helpers/image-origin.ts';
import { startTestService, testEnv } from '../test/helpers/service.ts';

const ITEMS = 1000;
const IMAGES = 200;
// 190 × 180 RGB noise: incompressible, so each PNG is about 100 KB.
const SIDE = [190, 180] as const;
const TARGET_PER_SECOND = 100;

const origin = await startImageOrigin();
for (let i = 0; i < IMAGES; i++) origin.serve(`/bench/${i}.png`, { body: await makeImage('png', SIDE[0], SIDE[1], i + 1) });
origin.serve('/warm-up.png', { body: await makeImage('png', 16, 16, 999) });
const imageBytes = (await makeImage('png', SIDE[0], SIDE[1], 1)).length;

const storageDir = mkdtempSync(join(tmpdir(), 'catalog-bench-media-'));
const overrides = { ROLE: 'api', OUTBOUND_ALLOW_PRIVATE: 'true', STORAGE_DIR: storageDir, LOG_LEVEL: 'warn', ...(process.env.MEDIA_CONCURRENCY ? { MEDIA_CONCURRENCY: process.env.MEDIA_CONCURRENCY } : {}) };
const service = await startTestService(import.meta.filename, overrides);
const tenant = await service.newTenant();
const opts = { baseUrl: `${service.url}/api/v1/catalog`, headers: { authorization: `Bearer ${tenant.key}` } };

// The consumers (relay + media) in a process of their own, so its peak RSS is the consumer's alone.
const profile = process.env.BENCH_CPU_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`] : [];
const consumer = spawn(process.execPath, [...profile, 'cli/main.ts', 'serve'], {
  env: { ...testEnv(import.meta.filename, service.databaseUrl, overrides), ROLE: 'consumers', KAFKA_BROKERS: service.service.kafka.brokers.join(','), KAFKA_TOPIC_PREFIX: service.config.kafkaTopicPrefix },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const sql = new pg.Client({ connectionString: service.databaseUrl });
await sql.connect();

async function ingested(): Promise<{ done: number; failed: number }> {
  const { rows } = await sql.query(`SELECT count(*) FILTER (WHERE status = 'ingested')::int AS done, count(*) FILTER (WHERE status = 'failed')::int AS failed
    FROM media_assets WHERE catalog_id = $1 AND source_url LIKE '%/bench/%'`, [tenant.catalogId]);
  return rows[0];
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** user + system CPU of the consumer process, in ms (clock ticks of 10 ms). */
function cpu(): number {
  const fields = readFileSync(`/proc/${consumer.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

try {
  // Warm-up: the consumer has joined its group and loaded sharp before the clock starts.
  await api.upsertItem({ externalSystem: 'bench', externalId: 'warm-up', name: 'Warm-up', media: [{ url: origin.at('/warm-up.png') }] }, opts);
  await waitFor(async () => (await sql.query(`SELECT 1 FROM media_assets WHERE catalog_id = $1 AND status = 'ingested'`, [tenant.catalogId])).rowCount === 1, 120_000, 'warm-up image');

  // Each item names two images, the second through a tracking-parameter variant: 2,000 references, 200 assets.
  const items: ItemPayload[] = Array.from({ length: ITEMS }, (_, i) => ({
    externalSystem: 'bench', externalId: `item-${i}`, name: `Bench item ${i}`, price: i,
    media: [
      { url: origin.at(`/bench/${i % IMAGES}.png`), role: 'primary', sortOrder: 0 },
      { url: `${origin.at(`/bench/${(i * 7 + 3) % IMAGES}.png`)}?utm_source=bench&utm_medium=feed`, role: 'gallery', sortOrder: 1 },
    ],
  }));
  const cpuBefore = cpu();
  const started = performance.now();
  const answer = await api.bulkUpsertItems({ items }, opts);
  if (answer.status !== 200) throw new Error(`bulk upsert answered ${answer.status}`);
  const upserted = performance.now();
  await waitFor(async () => { const c = await ingested(); return c.done + c.failed >= IMAGES; }, 300_000, 'all images ingested');
  // From the upsert's answer: the jobs are committed then; what follows is relay, Kafka and the consumer.
  const seconds = (performance.now() - upserted) / 1000;
  const { done, failed } = await ingested();
  const downloads = Array.from({ length: IMAGES }, (_, i) => origin.gets(`/bench/${i}.png`)).reduce((a, b) => a + b, 0);
  const rss = peakRssMb(consumer.pid!);
  const consumerCpuMs = cpu() - cpuBefore;
  const { rows: [span] } = await sql.query(`SELECT extract(epoch FROM max(last_checked_at) - min(last_checked_at))::float8 AS s
    FROM media_assets WHERE catalog_id = $1 AND source_url LIKE '%/bench/%'`, [tenant.catalogId]);
  console.log([
    `items upserted:        ${ITEMS} in 1 bulk request (${Math.round(upserted - started)} ms), ${ITEMS * 2} media references`,
    `distinct images:       ${IMAGES} × ~${Math.round(imageBytes / 1024)} KB PNG`,
    `downloads made:        ${downloads} (must be ${IMAGES})`,
    `ingested / failed:     ${done} / ${failed}`,
    `images ingested per s: ${(done / seconds).toFixed(1)} end to end (upsert answered → last image recorded: ${seconds.toFixed(2)} s; target ≥ ${TARGET_PER_SECOND})`,
    `                       ${((done - 1) / span.s).toFixed(1)} in the consumer (first → last image recorded: ${span.s.toFixed(2)} s)`,
    `consumer CPU:          ${consumerCpuMs} ms (${(consumerCpuMs / IMAGES).toFixed(1)} ms per image; its relay and webhook fan-out of the ${ITEMS} item events included)`,
    `consumer peak RSS:     ${rss.toFixed(0)} MB`,
    `load average (1 min):  ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores`,
  ].join('\n'));
  process.exitCode = downloads === IMAGES && done === IMAGES ? 0 : 1;
} finally {
  consumer.kill('SIGTERM');
  await new Promise((resolve) => consumer.once('exit', resolve));
  await sql.end();
  await service.close();
  await origin.close();
}
