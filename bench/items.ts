// `npm run bench:items`: single upserts (created, updated, unchanged mixes) at 16 connections against
// the service and a bare baseline, a catalog's groups of single upserts alone, then bulk upserts of
// 1000-item bodies; prints them side by side.
import { fork, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import { createApiKey } from '../domain/access/key-store.ts';
import { createCatalog } from '../domain/access/catalogs.ts';
import { upsertItems } from '../domain/items/upsert.ts';
import type { Db } from '../platform/db/sql.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { createLogger } from '../platform/log/logger.ts';
import { ensureKafka } from '../scripts/kafka.ts';
import { cpuPerUnit, cpuSnapshot } from './cpu.ts';
import { dropBenchDatabase, freshBenchDatabase } from './database.ts';
import { cliActor } from '../platform/actor.ts';
import { requireFreePort, track } from './children.ts';

const DURATION = Number(process.env.BENCH_DURATION ?? 20);
// The created mix in a new database, from its first item, in blocks: whether a new deployment's
// first minute runs as fast as the rest (platform/db/first-statistics.ts).
const NEW_DATABASE_BLOCKS = 3;
const NEW_DATABASE_BLOCK_S = 8;
const CONNECTIONS = 16;
const SERVICE_PORT = 18_091;
const BASELINE_PORT = 18_092;
const PATH = '/api/v1/catalog/items/upsert';
const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DB_NAME = 'catalog_bench_items';

const payload = (id: string, price: number) => JSON.stringify({
  externalSystem: 'bench', externalId: id, sku: `SKU-${id}`, name: `Bench item ${id}`, price,
  category: { name: `Category ${Number(id.replace(/\D/g, '')) % 20}` }, tags: ['bench', 'load'],
});

interface Figures { rps: number; p50: number; p99: number; errors: number; cpu: Map<string, number> }

/** `server`: the process answering (the service's api role or the baseline), whose CPU a request is read from /proc with Postgres's and this script's (the load generator). */
async function load(url: string, key: string, mix: 'created' | 'updated' | 'unchanged', seeded: number, server: number, duration = DURATION): Promise<Figures> {
  let counter = 0;
  const prefix = `${mix}-${url.slice(-4)}-${Date.now()}`;
  const roles = new Map([['api', server], ['this script', process.pid]]);
  const before = cpuSnapshot(roles);
  const result = await autocannon({
    url: `${url}${PATH}`,
    connections: CONNECTIONS,
    duration,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    requests: [{
      method: 'POST',
      setupRequest: (request) => {
        counter += 1;
        // created: always a new identity; updated: a seeded identity with a new price; unchanged: as seeded.
        const body = mix === 'created' ? payload(`${prefix}-${counter}`, 10)
          : mix === 'updated' ? payload(`seed-${counter % seeded}`, 10 + counter)
            : payload(`seed-${counter % seeded}`, 10);
        return { ...request, body };
      },
    }],
  });
  const cpu = cpuPerUnit(before, cpuSnapshot(roles), result.requests.total);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.non2xx + result.errors, cpu };
}

async function seed(url: string, key: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 1000) {
    const items = Array.from({ length: Math.min(1000, count - start) }, (_, i) => JSON.parse(payload(`seed-${start + i}`, 10)));
    await post(`${url}/api/v1/catalog/items/bulk-upsert`, key, { items });
  }
}

async function post(url: string, key: string, body: unknown): Promise<unknown> {
  const response = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${await response.text()}`);
  return response.json();
}

async function bulk(url: string, key: string, bodies: number, fresh: boolean, run: string): Promise<number> {
  // Bodies are serialized before the clock starts: the load generator shares the two cores.
  const prepared = Array.from({ length: bodies }, (_, b) => JSON.stringify({
    items: Array.from({ length: 1000 }, (_, i) => JSON.parse(payload(`bulk-${fresh ? run : 'u'}-${b}-${i}`, 10))),
  }));
  const started = performance.now();
  const send = async (worker: number) => {
    for (let b = worker; b < bodies; b += 2) {
      const response = await fetch(`${url}/api/v1/catalog/items/bulk-upsert`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: prepared[b],
      });
      if (!response.ok) throw new Error(`bulk upsert: HTTP ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
    }
  };
  await Promise.all([send(0), send(1)]);
  return (bodies * 1000) / ((performance.now() - started) / 1000);
}

function waitFor(url: string): Promise<void> {
  return new Promise((done, fail) => {
    const deadline = Date.now() + 60_000;
    const tick = () => fetch(url).then(() => done(), () => (Date.now() > deadline ? fail(new Error(`${url} never answered`)) : setTimeout(tick, 200)));
    tick();
  });
}

// A catalog's single upserts go to the database one group at a time (domain/items/single-upserts.ts);
// at 16 connections a group holds 7–8 requests.
const GROUP = Number(process.env.BENCH_GROUP ?? 8);
const GROUPS = 500;
// Groups of one and of sixteen, beside GROUP: what a group costs whatever its size, and what each item adds.
const SMALL_GROUP = 1;
const LARGE_GROUP = 16;

// One count for every call, so that an updated item never gets a price it had in an earlier call.
let aloneCounter = 0;

interface Alone { perSecond: number; groupUs: number; cpu: Map<string, number> }

/**
 * The groups alone: the service's own code for a group (lookup, write, the stored items back),
 * in this process, one group after another, no HTTP. A catalog's single upserts cannot go faster
 * than this, whatever the api's HTTP work costs; the first GROUPS / 5 groups warm up uncounted.
 * `cpu` is per group.
 */
async function groupsAlone(db: Db, catalogId: string, mix: 'created' | 'updated', seeded: number, run: string, size: number): Promise<Alone> {
  const group = () => Array.from({ length: size }, () => {
    aloneCounter += 1;
    return JSON.parse(mix === 'created' ? payload(`alone-${run}-${aloneCounter}`, 10) : payload(`seed-${aloneCounter % seeded}`, 1_000 + aloneCounter)) as unknown;
  });
  const write = async (groups: number) => {
    for (let g = 0; g < groups; g += 1) {
      const entries = await upsertItems(db, catalogId, group(), { mediaRefreshAgeHours: 24, returnStored: true });
      if (entries.some((entry) => entry.status !== mix)) throw new Error(`groups alone, ${mix}: ${entries.map((entry) => entry.status).join(', ')}`);
    }
  };
  await write(GROUPS / 5);
  const roles = new Map([['this script', process.pid]]);
  const before = cpuSnapshot(roles);
  const started = performance.now();
  await write(GROUPS);
  const ms = performance.now() - started;
  return { perSecond: (GROUPS * size * 1000) / ms, groupUs: (ms * 1000) / GROUPS, cpu: cpuPerUnit(before, cpuSnapshot(roles), GROUPS) };
}

/** A group's cost as `fixed + perItem × size`, from groups of SMALL_GROUP and LARGE_GROUP: time, then this process's and Postgres's CPU. */
function groupCostLine(small: Alone, large: Alone): string {
  const fit = (at: (alone: Alone) => number) => {
    const perItem = (at(large) - at(small)) / (LARGE_GROUP - SMALL_GROUP);
    return { fixed: at(small) - perItem * SMALL_GROUP, perItem };
  };
  const parts = [fit((a) => a.groupUs), fit((a) => a.cpu.get('this script') ?? 0), fit((a) => a.cpu.get('Postgres') ?? 0)];
  const [time, own, postgres] = parts.map(({ fixed, perItem }) => `${fixed.toFixed(0)} + ${perItem.toFixed(0)}`);
  return `a group, µs: ${time} an item (CPU: this process ${own}, Postgres ${postgres}); ${SMALL_GROUP} a group: ${small.perSecond.toFixed(0)} items/s, ${LARGE_GROUP}: ${large.perSecond.toFixed(0)}`;
}

/** server, Postgres, load and their total, µs a request. */
function cpuCells(cpu: ReadonlyMap<string, number>): string {
  const parts = [cpu.get('api') ?? 0, cpu.get('Postgres') ?? 0, cpu.get('this script') ?? 0];
  return [...parts, parts.reduce((a, b) => a + b, 0)].map((us) => us.toFixed(0).padStart(9)).join('');
}

const stop = (child: ChildProcess) => new Promise<void>((done) => { child.once('exit', () => done()); child.kill('SIGTERM'); });

async function main(): Promise<void> {
  await requireFreePort(SERVICE_PORT, 'the service under test');
  await requireFreePort(BASELINE_PORT, 'the baseline server');
  const logger = createLogger('warn', 2);
  const { brokers } = await ensureKafka({ dataDir: resolve('.data') });
  const databaseUrl = await freshBenchDatabase(ADMIN_URL, DB_NAME);
  const orm = await openDatabase({ databaseUrl, logger, poolSize: 2 });
  const em = orm.em.fork();
  const service = await createCatalog(em, { name: 'bench-service', ownerEmail: 'bench@example.com' }, cliActor());
  const baseline = await createCatalog(em, { name: 'bench-baseline', ownerEmail: 'bench@example.com' }, cliActor());
  // The benchmark measures throughput, not the rate limit: a key with a limit it cannot reach.
  const { key } = await createApiKey(em, { catalogId: service.id, scopes: ['catalog:write', 'catalog:read'], tier: 'enterprise', rateLimitPerMinute: 1_000_000_000 }, cliActor());
  await orm.close();

  const env = { ...process.env, DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: 'bench.', LOG_LEVEL: 'warn', OPS_PORT: '0' };
  const api = track(spawn(process.execPath, ['cli/main.ts', 'serve', '--role', 'api'], { env: { ...env, PORT: String(SERVICE_PORT) }, stdio: ['ignore', 'ignore', 'inherit'] }));
  const bare = track(fork('bench/baseline-server.ts', { env: { ...env, PORT: String(BASELINE_PORT), CATALOG_ID: baseline.id }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] }));
  const serviceUrl = `http://127.0.0.1:${SERVICE_PORT}`;
  const baselineUrl = `http://127.0.0.1:${BASELINE_PORT}`;
  try {
    await Promise.all([waitFor(`${serviceUrl}/healthz`), new Promise((done) => bare.once('message', done))]);
    console.log(`A new database, the created mix from its first item, ${CONNECTIONS} connections, blocks of ${NEW_DATABASE_BLOCK_S} s:`);
    for (let block = 1; block <= NEW_DATABASE_BLOCKS; block += 1) {
      const figures = await load(serviceUrl, key, 'created', 0, api.pid!, NEW_DATABASE_BLOCK_S);
      console.log(`block ${block}  ${figures.rps.toFixed(0).padStart(13)} req/s  p99 ${figures.p99.toFixed(1)} ms`);
    }
    const seeded = 2000;
    await seed(serviceUrl, key, seeded);
    for (let i = 0; i < seeded; i += 1) await fetch(`${baselineUrl}${PATH}`, { method: 'POST', body: payload(`seed-${i}`, 10) }).then((r) => r.arrayBuffer());
    console.log(`Single upserts, ${CONNECTIONS} connections, ${DURATION} s per mix (service | baseline: node:http + pg, one INSERT … ON CONFLICT):`);
    console.log('mix        service req/s  p50 ms  p99 ms | baseline req/s  p50 ms  p99 ms | ratio  target (#23): ≥ 90 %, p99 ≤ 15 ms');
    const cpuLines: string[] = [];
    const baselineRps = new Map<string, number>();
    for (const mix of ['created', 'updated', 'unchanged'] as const) {
      const ours = await load(serviceUrl, key, mix, seeded, api.pid!);
      const base = await load(baselineUrl, key, mix, seeded, bare.pid!);
      baselineRps.set(mix, base.rps);
      cpuLines.push(`${mix.padEnd(10)} ${cpuCells(ours.cpu)} | ${cpuCells(base.cpu)}`);
      const ratio = ours.rps / base.rps;
      console.log(`${mix.padEnd(10)} ${ours.rps.toFixed(0).padStart(13)} ${ours.p50.toFixed(1).padStart(7)} ${ours.p99.toFixed(1).padStart(7)} | ${base.rps.toFixed(0).padStart(14)} ${base.p50.toFixed(1).padStart(7)} ${base.p99.toFixed(1).padStart(7)} | ${(ratio * 100).toFixed(0).padStart(4)} %  ${ratio >= 0.9 && ours.p99 <= 15 ? 'met' : 'MISSED'}${ours.errors + base.errors > 0 ? `  (non-2xx/errors: ${ours.errors}/${base.errors})` : ''}`);
    }
    console.log('CPU µs a request (server: the api role | the baseline; Postgres: the whole server; load: this script, autocannon):');
    console.log(`mix        ${['server', 'Postgres', 'load', 'total'].map((h) => h.padStart(9)).join('')} | ${['server', 'Postgres', 'load', 'total'].map((h) => h.padStart(9)).join('')}`);
    for (const line of cpuLines) console.log(line);
    const run = Date.now().toString(36);
    console.log(`A catalog's groups alone, ${GROUP} single upserts a group, one group at a time: the service's code in this process, no HTTP (the most one catalog's single upserts can reach):`);
    const groupsOrm = await openDatabase({ databaseUrl, logger, poolSize: 2 });
    const costLines: string[] = [];
    try {
      for (const mix of ['created', 'updated'] as const) {
        const ofSize = (size: number) => groupsAlone(groupsOrm.em.fork(), service.id, mix, seeded, run, size);
        const small = await ofSize(SMALL_GROUP);
        const alone = await ofSize(GROUP);
        const large = await ofSize(LARGE_GROUP);
        const share = alone.perSecond / baselineRps.get(mix)!;
        console.log(`${mix.padEnd(10)} ${alone.perSecond.toFixed(0).padStart(8)} items/s, ${(share * 100).toFixed(0).padStart(3)} % of the baseline's req/s above; CPU µs an item: this process ${(alone.cpu.get('this script')! / GROUP).toFixed(0)}, Postgres ${(alone.cpu.get('Postgres')! / GROUP).toFixed(0)}`);
        costLines.push(`${mix.padEnd(10)} ${groupCostLine(small, large)}`);
      }
    } finally {
      await groupsOrm.close();
    }
    console.log(`What a group costs whatever its size, and what each item adds (from groups of ${SMALL_GROUP} and ${LARGE_GROUP}):`);
    for (const line of costLines) console.log(line);
    const bodies = Number(process.env.BENCH_BULK_BODIES ?? 30);
    const fresh = await bulk(serviceUrl, key, bodies, true, run);
    await bulk(serviceUrl, key, bodies, false, run);
    const unchanged = await bulk(serviceUrl, key, bodies, false, run);
    console.log(`Bulk upserts, 1000-item bodies × ${bodies}, 2 connections:`);
    console.log(`fresh      ${fresh.toFixed(0).padStart(8)} items/s   target (#23) ≥ 30,000: ${fresh >= 30_000 ? 'met' : 'MISSED'}`);
    console.log(`unchanged  ${unchanged.toFixed(0).padStart(8)} items/s   target (#23) ≥ 100,000: ${unchanged >= 100_000 ? 'met' : 'MISSED'}`);
  } finally {
    await Promise.all([stop(api), stop(bare)]);
    await dropBenchDatabase(ADMIN_URL, DB_NAME);
  }
}

await main();
