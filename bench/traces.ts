// `npm run bench:traces`: the api role with traces off and on (OTLP to a loopback sink that discards), single upserts and bulk upserts, side by side in one run; `-- import`: bench:import's figures, off and on.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import { createApiKey } from '../domain/access/key-store.ts';
import { createCatalog } from '../domain/access/catalogs.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { createLogger } from '../platform/log/logger.ts';
import { ensureKafka } from '../scripts/kafka.ts';
import { freePort } from '../scripts/free-port.ts';
import { dropBenchDatabase, freshBenchDatabase } from './database.ts';
import { SERVICE_PROCESS_ENV } from './service-env.ts';
import { traceImports } from './traces-import.ts';
import { cliActor } from '../platform/actor.ts';
import { track } from './children.ts';

const DURATION = Number(process.env.BENCH_DURATION ?? 15);
// Rounds of each side, alternated, so a busy moment of the machine weighs on both.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = 16;
const BULK_BODIES = Number(process.env.BENCH_BULK_BODIES ?? 10);
const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DB_NAME = 'catalog_bench_traces';
const PATH = '/api/v1/catalog/items/upsert';

const payload = (id: string, price: number) => ({
  externalSystem: 'bench', externalId: id, sku: `SKU-${id}`, name: `Bench item ${id}`, price, category: { name: `Category ${id.length % 20}` }, tags: ['bench'],
});

async function single(url: string, key: string, mix: 'created' | 'updated', tag: string): Promise<{ rps: number; p99: number; errors: number }> {
  let counter = 0;
  const result = await autocannon({
    url: `${url}${PATH}`, connections: CONNECTIONS, duration: DURATION,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    requests: [{
      method: 'POST',
      setupRequest: (request) => {
        counter += 1;
        return { ...request, body: JSON.stringify(mix === 'created' ? payload(`${tag}-${counter}`, 10) : payload(`seed-${tag}-${counter % 1000}`, 10 + counter)) };
      },
    }],
  });
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.non2xx + result.errors };
}

async function bulk(url: string, key: string, tag: string): Promise<number> {
  const began = performance.now();
  for (let body = 0; body < BULK_BODIES; body += 1) {
    const items = Array.from({ length: 1000 }, (_, i) => payload(`bulk-${tag}-${body}-${i}`, 10));
    const response = await fetch(`${url}/api/v1/catalog/items/bulk-upsert`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ items }) });
    if (!response.ok) throw new Error(`bulk upsert answered ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
  }
  return (BULK_BODIES * 1000) / ((performance.now() - began) / 1000);
}

async function waitFor(url: string): Promise<void> {
  for (;;) {
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    await new Promise((done) => setTimeout(done, 200));
  }
}

const stop = (child: ChildProcess) => new Promise<void>((done) => { child.once('exit', () => done()); child.kill('SIGTERM'); });

/** The collector's side is not measured: a sink that reads each export and answers at once. */
async function startSink(): Promise<{ url: string; bytes: () => number; close: () => void }> {
  let exported = 0;
  const sink = createServer((req, res) => { req.on('data', (chunk: Buffer) => { exported += chunk.length; }); req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}')); });
  await new Promise<void>((done) => sink.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`, bytes: () => exported, close: () => sink.close() };
}

async function upserts(sink: Awaited<ReturnType<typeof startSink>>): Promise<void> {
  const { brokers } = await ensureKafka({ dataDir: resolve('.data') });
  const databaseUrl = await freshBenchDatabase(ADMIN_URL, DB_NAME);
  const orm = await openDatabase({ databaseUrl, logger: createLogger('warn', 2), poolSize: 2 });
  const keys: string[] = [];
  for (const name of ['off', 'on']) {
    const catalog = await createCatalog(orm.em.fork(), { name: `bench-traces-${name}`, ownerEmail: 'bench@example.com' }, cliActor());
    keys.push((await createApiKey(orm.em.fork(), { catalogId: catalog.id, scopes: ['catalog:write'], tier: 'enterprise', rateLimitPerMinute: 1_000_000_000 }, cliActor())).key);
  }
  await orm.close();
  const env = { ...process.env, ...SERVICE_PROCESS_ENV, DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: 'bench-traces.', LOG_LEVEL: 'warn', OPS_PORT: '0', HOST: '127.0.0.1' };
  const tracing = { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url };
  const ports = [await freePort(), await freePort()];
  const apis = [{}, tracing].map((extra, i) => track(spawn(process.execPath, ['cli/main.ts', 'serve', '--role', 'api'], { env: { ...env, ...extra, PORT: String(ports[i]) }, stdio: ['ignore', 'ignore', 'inherit'] })));
  const urls = ports.map((port) => `http://127.0.0.1:${port}`);
  try {
    await Promise.all(urls.map((url) => waitFor(`${url}/healthz`)));
    for (const [i, url] of urls.entries()) await bulk(url, keys[i]!, 'warm');
    console.log(`Traces off | on (OTLP to a loopback sink), the api role, ${CONNECTIONS} connections, ${ROUNDS} × ${DURATION} s a side and mix, alternated:`);
    console.log('mix           off req/s  p99 ms |   on req/s  p99 ms | on/off');
    for (const mix of ['created', 'updated'] as const) {
      const sums = [{ rps: 0, p99: 0, errors: 0 }, { rps: 0, p99: 0, errors: 0 }];
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const i of [0, 1]) {
          const figures = await single(urls[i]!, keys[i]!, mix, `${mix}-${round}-${i}-${Date.now()}`);
          sums[i]!.rps += figures.rps / ROUNDS;
          sums[i]!.p99 = Math.max(sums[i]!.p99, figures.p99);
          sums[i]!.errors += figures.errors;
        }
      }
      const [off, on] = sums as [typeof sums[0], typeof sums[0]];
      console.log(`${mix.padEnd(10)} ${off.rps.toFixed(0).padStart(12)} ${off.p99.toFixed(1).padStart(7)} | ${on.rps.toFixed(0).padStart(10)} ${on.p99.toFixed(1).padStart(7)} | ${((on.rps / off.rps) * 100).toFixed(0).padStart(4)} %${off.errors + on.errors > 0 ? `  (errors ${off.errors}/${on.errors})` : ''}`);
    }
    const bulkRates = [0, 0];
    for (let round = 0; round < ROUNDS; round += 1) for (const i of [0, 1]) bulkRates[i]! += (await bulk(urls[i]!, keys[i]!, `${round}-${Date.now()}`)) / ROUNDS;
    console.log(`bulk fresh ${bulkRates[0]!.toFixed(0).padStart(12)} items/s | ${bulkRates[1]!.toFixed(0).padStart(10)} items/s | ${((bulkRates[1]! / bulkRates[0]!) * 100).toFixed(0).padStart(4)} %   (1000-item bodies × ${BULK_BODIES}, one connection)`);
    console.log(`spans exported to the sink: ${(sink.bytes() / 1e6).toFixed(1)} MB`);
  } finally {
    await Promise.all(apis.map(stop));
    await dropBenchDatabase(ADMIN_URL, DB_NAME);
  }
}

const sink = await startSink();
try {
  if (process.argv[2] === 'import') await traceImports(sink, ROUNDS);
  else await upserts(sink);
} finally {
  sink.close();
}
