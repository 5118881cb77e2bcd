// A fleet of 2 api and 3 consumers processes under faults (kills, dropped connections mid-import and mid-ingestion, a broker outage, a member joining): every count exact, no job failed, no error logged.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { checkedFetch } from '../helpers/contract-check.ts';
import { startConsumersProcess } from '../helpers/consumers-process.ts';
import { ADMIN_DATABASE_URL, freshDatabase, sqlClient } from '../helpers/database.ts';
import { makeImage, startImageOrigin } from '../helpers/image-origin.ts';
import type { ImageOrigin } from '../helpers/image-origin.ts';
import { TERMINAL, item, jsonl, upload } from '../helpers/imports.ts';
import { privateBroker } from '../helpers/kafka.ts';
import { waitWhileProgressing } from '../helpers/progress.ts';
import { freePort } from '../../scripts/free-port.ts';
import { createCatalog } from '../../domain/access/catalogs.ts';
import { createApiKey } from '../../domain/access/key-store.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { launchService } from '../helpers/spawned-service.ts';
import type { ServiceProcess } from '../helpers/spawned-service.ts';
import { testEnv } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';
import { cliActor } from '../../platform/actor.ts';

const FILE = import.meta.filename;
const JOBS_PER_TENANT = 3;
const LINES = 3000;
// Every BAD_EVERY-th line of a file is invalid (a GTIN of the wrong length): 2 %.
const BAD_EVERY = 50;
// Every IMAGE_EVERY-th line names one of IMAGES images, ingested once the catalog's imports end.
const IMAGE_EVERY = 20;
const IMAGES = 40;
const UPSERTS_PER_TENANT = 150;
// No progress for this long fails a wait: past the longest backoff after an outage (30 s), a safety net.
const STALL_MS = 90_000;
const broker = privateBroker('kafka-test-fleet');
const children = new Set<ChildProcess>();
const SHARED = {
  STORAGE_DIR: mkdtempSync(join(tmpdir(), 'catalog-fleet-storage-')),
  IMPORT_JOBS_PER_PROCESS: '2',
  OUTBOUND_ALLOW_PRIVATE: 'true', // the receiver is on loopback
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_RETRY_DELAYS_MS: '0,200,400,800,1600,3200,6400,12800',
};

let databaseUrl: string;
let brokers: string[];
let orm: Orm;
let admin: pg.Client;
let receiver: Receiver;
let origin: ImageOrigin;
const apis: ServiceProcess[] = [];

/** The environment every process of the fleet shares: one database, one broker, one storage, one signing secret. */
const fleetEnv = (extra: Record<string, string> = {}) => ({ KAFKA_BROKERS: brokers.join(','), ...SHARED, ...extra });

async function startApi(): Promise<ServiceProcess> {
  const env = testEnv(FILE, databaseUrl, fleetEnv({ PORT: String(await freePort()), LOG_LEVEL: 'warn' }));
  // Node only: each of its faults runs under Deno too, one service at a time (postgres-drop,
  // kafka-outage-start, imports-crash, webhooks-crash); five Deno processes at once would take
  // the CI run past its time on 2 cores (docs/design.md, "Runtimes").
  const started = await launchService('node', env, ['--role', 'api']);
  apis.push(started);
  return started;
}

// Every consumers process's log, for what the faults made it say.
const consumerLogs: string[] = [];

async function startConsumers(name: string): Promise<ChildProcess> {
  const child = await startConsumersProcess({ file: FILE, databaseUrl, env: fleetEnv(), name, children });
  const at = consumerLogs.push('') - 1;
  const keep = (chunk: Buffer) => { consumerLogs[at] += chunk.toString(); };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return child;
}

before(async () => {
  brokers = await broker.start();
  databaseUrl = await freshDatabase(FILE);
  orm = await openDatabase({ databaseUrl, logger: createLogger('silent'), poolSize: 2 });
  admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await admin.connect();
  receiver = await startReceiver();
  origin = await startImageOrigin();
  for (let i = 0; i < IMAGES; i++) origin.serve(`/image-${i}.png`, { body: await makeImage('png', 96, 64, i + 1), contentType: 'image/png' });
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(apis.map((instance) => instance.stop()));
  await receiver?.close();
  await origin?.close();
  await admin?.end();
  await broker.remove();
});

/** The receiver fails the first attempt of one event in ten, chosen by its id. */
function failingTenPercent(path: string): void {
  const seen = new Set<string>();
  receiver.script(path, (receipt) => {
    const first = !seen.has(receipt.event.id);
    seen.add(receipt.event.id);
    const unlucky = createHash('sha256').update(receipt.event.id).digest()[0]! % 10 === 0;
    return { status: first && unlucky ? 503 : 200 };
  });
}

test('2 api and 3 consumers processes through kills, dropped connections, a broker outage and a member joining: nothing lost, nothing failed', async (t) => {
  const databaseName = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  const [apiOne, apiTwo] = [await startApi(), await startApi()];
  const consumers = [await startConsumers('consumers-1'), await startConsumers('consumers-2'), await startConsumers('consumers-3')];

  const tenants = await Promise.all(['A', 'B'].map(async (name) => {
    const catalog = await createCatalog(orm.em.fork(), { name: `fleet-${name}-${Date.now()}`, ownerEmail: `fleet-${name}@merchant.example` }, cliActor());
    const { key } = await createApiKey(orm.em.fork(), { catalogId: catalog.id, scopes: ['catalog:read', 'catalog:write', 'bulk_import:manage', 'webhooks:manage'], tier: 'enterprise' }, cliActor());
    const path = `/hook-${name}`;
    const hook = expectData(await api.createWebhook({ url: receiver.url(path), events: ['item.created', 'item.updated', 'import.completed'] }, {}, clientOptions(apiOne.url, key)), 201);
    receiver.secrets(path, [hook.secret]);
    failingTenPercent(path);
    return { name, catalogId: catalog.id, key, path };
  }));

  // Imports: 3 files a tenant, 2 % of their lines invalid.
  const jobs: Array<{ jobId: string; tenant: (typeof tenants)[number] }> = [];
  for (const tenant of tenants) {
    for (let j = 0; j < JOBS_PER_TENANT; j++) {
      const image = (i: number) => (i % IMAGE_EVERY === 1 ? { media: [{ url: origin.at(`/image-${Math.floor(i / IMAGE_EVERY) % IMAGES}.png`), role: 'primary' as const }] } : {});
      const lines = Array.from({ length: LINES }, (_, i) => item(`${tenant.name}-${j}-${i}`, i % BAD_EVERY === 0 ? { gtin13: '1' } : { price: i / 100, ...image(i) }));
      const file = jsonl(lines);
      const opts = clientOptions(j % 2 === 0 ? apiOne.url : apiTwo.url, tenant.key);
      const created = expectData(await api.createImport({ fileSizeBytes: file.length }, {}, opts), 201);
      assert.equal((await upload(created.uploadUrl, file)).response.status, 200);
      expectData(await api.startImport(created.jobId, opts), 202);
      jobs.push({ jobId: created.jobId, tenant });
    }
  }

  // Single upserts alongside, to whichever api process is alive: an upsert is safe to send again.
  const upserts = (async () => {
    for (let i = 0; i < UPSERTS_PER_TENANT; i++) {
      for (const tenant of tenants) {
        const payload = { externalSystem: 'pos', externalId: `${tenant.name}-single-${i}`, name: `Single ${i}`, price: i };
        for (const target of [apis[i % 2]!, ...apis]) {
          if (!target.alive()) continue;
          const answer = await api.upsertItem(payload, clientOptions(target.url, tenant.key)).catch(() => undefined);
          if (answer?.status === 201 || answer?.status === 200) break;
          assert.ok(answer === undefined || answer.status >= 500, `upsert answered ${answer?.status}: ${JSON.stringify(answer?.data)}`);
        }
      }
    }
  })();

  // The ORM made the catalogs; the faults must not reach the test's own connections.
  await orm.close();
  const sql = await sqlClient(databaseUrl);
  const ownPid = (await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const count = async (text: string, params: unknown[] = []) => (await sql.query<{ n: number }>(text, params)).rows[0]!.n;
  const processedLines = () => count('SELECT coalesce(sum(processed), 0)::int AS n FROM import_jobs');
  try {
    await waitWhileProgressing('imports to start', async () => await processedLines() > 0, processedLines, STALL_MS);

    // Fault 1: a consumers process killed mid-import, and a new member joining the groups.
    consumers[0]!.kill('SIGKILL');
    const joining = startConsumers('consumers-4');
    t.diagnostic(`killed consumers-1 and starting consumers-4 at ${await processedLines()} lines`);

    // Fault 2: every connection of the fleet dropped (not the test's own).
    const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = $1 AND pid <> $2) t`, [databaseName, ownPid]);
    t.diagnostic(`terminated ${rows[0]!.n} backends at ${await processedLines()} lines`);

    // Fault 3: the broker away. The API tier stays ready and writes go on.
    await broker.stop();
    for (const instance of apis.filter((p) => p.alive())) {
      await waitWhileProgressing('/readyz to report Kafka', async () => {
        const ready = await checkedFetch(`${instance.url}/readyz`);
        // Kafka away never takes the API tier out of the load balancer; the database, reconnecting
        // after fault 2 on a busy machine, may for a moment.
        if (ready.response.status !== 200) assert.equal(ready.body.checks.database, 'error', 'only the database makes the API tier unready');
        return ready.response.status === 200 && ready.body.checks.kafka === 'error';
      }, async () => undefined, STALL_MS);
    }
    const during = await api.upsertItem({ externalSystem: 'pos', externalId: 'during-outage', name: 'Written while Kafka is away' }, clientOptions(apiOne.url, tenants[0]!.key));
    assert.equal(during.status, 201);
    await broker.start();
    consumers.push(await joining);
    t.diagnostic(`the broker is back and consumers-4 runs at ${await processedLines()} lines`);

    // Fault 4: an api process killed; the clients go on with the other one.
    apiTwo.child.kill('SIGKILL');
    await upserts;

    // Every job ends as its file says, none failed by the faults.
    const progress = () => count(`SELECT coalesce(sum(processed), 0)::int + count(*) FILTER (WHERE status IN ('completed', 'completed_with_errors'))::int AS n FROM import_jobs`);
    await waitWhileProgressing('every import to end', async () =>
      await count(`SELECT count(*)::int AS n FROM import_jobs WHERE status = ANY($1)`, [TERMINAL]) === jobs.length, progress, STALL_MS);

    // Fault 5: every connection dropped again while the images, held until the imports ended, are ingested.
    const ingested = () => count(`SELECT count(*)::int AS n FROM media_assets WHERE status = 'ingested'`);
    await waitWhileProgressing('image ingestion to start', async () => await ingested() > 0, ingested, STALL_MS);
    const dropped = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = $1 AND pid <> $2) t`, [databaseName, ownPid]);
    t.diagnostic(`terminated ${dropped.rows[0]!.n} backends at ${await ingested()} images ingested`);
    await waitWhileProgressing('every image to be ingested', async () => await ingested() === IMAGES * tenants.length, ingested, STALL_MS);
    assert.equal(await count(`SELECT count(*)::int AS n FROM media_assets WHERE status <> 'ingested'`), 0, 'no image failed');
    const bad = Math.ceil(LINES / BAD_EVERY);
    for (const { jobId, tenant } of jobs) {
      const job = expectData(await api.getImport(jobId, clientOptions(apiOne.url, tenant.key)), 200);
      assert.equal(job.status, 'completed_with_errors', jobId);
      assert.deepEqual(job.counts, { total: LINES, processed: LINES, succeeded: LINES - bad, failed: bad, unchanged: 0 });
    }
    assert.equal(await count('SELECT coalesce(sum(processing_failures), 0)::int AS n FROM import_jobs'), 0, 'no fault counted as a processing failure');

    for (const tenant of tenants) {
      const expected = JOBS_PER_TENANT * (LINES - bad) + UPSERTS_PER_TENANT + (tenant === tenants[0] ? 1 : 0);
      assert.equal(await count('SELECT count(*)::int AS n FROM items WHERE catalog_id = $1', [tenant.catalogId]), expected, `${tenant.name}'s items`);
      // Every event of the catalog reached its webhook, signed; at least once, so deduplicated by id.
      const eventIds = async () => new Set((await sql.query<{ id: string }>(`SELECT event_id AS id FROM outbox_events
        WHERE payload::jsonb ->> 'catalogId' = $1 AND type = ANY($2)`, [tenant.catalogId, ['item.created', 'item.updated', 'import.completed']])).rows.map((r) => r.id));
      const received = () => new Set(receiver.receipts(tenant.path).filter((r) => r.signedWith.length > 0).map((r) => r.event.id));
      await waitWhileProgressing(`${tenant.name}'s deliveries`, async () => {
        const [sent, got] = [await eventIds(), received()];
        return sent.size > 0 && [...sent].every((id) => got.has(id));
      }, async () => received().size, STALL_MS);
      const sent = await eventIds();
      assert.equal(sent.size, JOBS_PER_TENANT * (LINES - bad) + UPSERTS_PER_TENANT + JOBS_PER_TENANT + (tenant === tenants[0] ? 1 : 0));
      assert.deepEqual([...received()].filter((id) => !sent.has(id)), [], 'nothing delivered that was not an event of the catalog');
      assert.ok(receiver.receipts(tenant.path).every((r) => r.signedWith.length > 0 && r.standardValid), 'every delivery is signed');
    }
    assert.equal(await count(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'exhausted'`), 0, 'no delivery exhausted');
    await waitWhileProgressing('the outbox to drain', async () => await count('SELECT count(*)::int AS n FROM outbox WHERE sent_at IS NULL') === 0,
      () => count('SELECT count(*)::int AS n FROM outbox WHERE sent_at IS NULL'), STALL_MS);
    // Every fault above heals by itself: error means a person must act, so none is logged.
    const logs = [...consumerLogs, ...apis.map((instance) => `${instance.output().stdout}\n${instance.output().stderr}`)];
    const errors = logs.join('\n').split('\n').filter((line) => /"level":(50|60)/.test(line));
    const kinds = new Map<string, number>();
    for (const line of errors) {
      const { component, msg } = JSON.parse(line) as { component?: string; msg?: string };
      const kind = `${component}: ${String(msg).slice(0, 100)}`;
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
    assert.equal(errors.length, 0, `error lines after faults the fleet recovered from:${[...kinds].map(([kind, n]) => `\n  ${n} × ${kind}`).join('')}`);
  } finally {
    await sql.end();
  }
});
