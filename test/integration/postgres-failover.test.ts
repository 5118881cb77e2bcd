// The primary crashes under load and its standby is promoted behind the same address: api and consumers processes recover without a restart, nothing acknowledged is lost (synchronous), counts stay exact.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import pg from 'pg';
import { LANE_LOCK_SPACE } from '../../consumers/relay/lanes.ts';
import { createCatalog } from '../../domain/access/catalogs.ts';
import { createApiKey } from '../../domain/access/key-store.ts';
import { LEGACY_LANE, OUTBOX_CHANNEL, OUTBOX_LANES } from '../../domain/events/outbox.ts';
import { DELIVERY_CHANNEL } from '../../domain/webhooks/delivery-store.ts';
import * as api from '../../generated/client.ts';
import type { ImportJob } from '../../generated/client.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { freePort } from '../../scripts/free-port.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { checkedFetch } from '../helpers/contract-check.ts';
import { databaseNameFor } from '../helpers/database.ts';
import { TERMINAL, item, jsonl, upload } from '../helpers/imports.ts';
import { sharedBrokers, topicPrefixFor } from '../helpers/kafka.ts';
import { eventually } from '../helpers/media.ts';
import { privateReplicatedPostgres } from '../helpers/postgres-replica.ts';
import type { PrivateReplicatedPostgres } from '../helpers/postgres-replica.ts';
import { testRuntime } from '../helpers/runtime.ts';
import { testEnv } from '../helpers/service.ts';
import { dropTopics, launchService } from '../helpers/spawned-service.ts';
import type { ServiceProcess } from '../helpers/spawned-service.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import type { TcpProxy } from '../helpers/tcp-proxy.ts';
import { startUpsertLoad } from '../helpers/upsert-load.ts';
import type { UpsertLoad } from '../helpers/upsert-load.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';
import { cliActor } from '../../platform/actor.ts';

const FILE = import.meta.filename;
const LINES = 3000;
// Every BAD_EVERY-th line is invalid (a GTIN of the wrong length).
const BAD_EVERY = 50;
const BAD = Math.ceil(LINES / BAD_EVERY);
// The crash lands once the import has committed this many lines, well before its end.
const CRASH_AT_LINES = 200;
const HOOK = '/hook';
// Bounds on the waits: what a busy 2-core machine needs, with room; a stuck process fails them.
const RECOVER_MS = 30_000;
const SETTLE_MS = 90_000;
// A single upsert's webhook once the backlog is out: the relay and the dispatcher are woken by NOTIFY.
const PROBE_MS = 5000;
// Upserts answered 2xx after the failover before the load stops.
const UPSERTS_AFTER = 60;

const portOf = (url: string) => Number(new URL(url).port);

/** What a drill runs on: a pair behind a proxy, an api and a consumers process, a receiver, a catalog. */
interface Bed {
  readonly mode: 'sync' | 'async';
  readonly pair: PrivateReplicatedPostgres;
  readonly proxy: TcpProxy;
  readonly databaseUrl: string;
  readonly api: ServiceProcess;
  readonly consumers: ServiceProcess;
  readonly receiver: Receiver;
  readonly catalogId: string;
  readonly key: string;
}

async function startBed(t: TestContext, synchronous: boolean): Promise<Bed> {
  const mode = synchronous ? 'sync' : 'async';
  const pair = privateReplicatedPostgres(`failover-${mode}-${testRuntime()}`, { synchronous });
  const dataDir = mkdtempSync(join(tmpdir(), `catalog-failover-${mode}-`));
  const topicPrefix = topicPrefixFor(`postgres-failover-${mode}-${testRuntime()}.test.ts`);
  const brokers = await sharedBrokers();
  const receiver = await startReceiver();
  const processes: ServiceProcess[] = [];
  let proxy: TcpProxy | undefined;
  t.after(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await receiver.close();
    await proxy?.close();
    await pair.remove();
    await dropTopics(brokers, topicPrefix).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  const { primaryUrl } = await pair.start();
  proxy = await startTcpProxy({ port: portOf(primaryUrl) });
  // A database of the test's own, behind the proxy: the api process creates and migrates it.
  const databaseUrl = `postgres://postgres@127.0.0.1:${proxy.port}/${databaseNameFor(`postgres-failover-${mode}-${testRuntime()}`)}`;
  const env = async (logLevel: string) => testEnv(FILE, databaseUrl, {
    PORT: String(await freePort()), OPS_PORT: String(await freePort()), LOG_LEVEL: logLevel,
    KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: topicPrefix,
    DATA_DIR: dataDir, STORAGE_DIR: join(dataDir, 'storage'),
    OUTBOUND_ALLOW_PRIVATE: 'true', WEBHOOK_ALLOW_HTTP: 'true', // the receiver is on loopback
    WEBHOOK_RETRY_DELAYS_MS: '0,200,400,800,1600,3200,6400,12800',
  });
  const apiProcess = await launchService(testRuntime(), await env('warn'), ['--role', 'api']);
  processes.push(apiProcess);
  // At info: its log tells each run of the import.
  const consumers = await launchService(testRuntime(), await env('info'), ['--role', 'consumers']);
  processes.push(consumers);

  const orm = await openDatabase({ databaseUrl, logger: createLogger('silent'), poolSize: 2, migrate: false, create: false });
  try {
    const catalog = await createCatalog(orm.em.fork(), { name: `failover-${mode}-${Date.now()}`, ownerEmail: 'failover@merchant.example' }, cliActor());
    const { key } = await createApiKey(orm.em.fork(), { catalogId: catalog.id, scopes: ['catalog:read', 'catalog:write', 'bulk_import:manage', 'webhooks:manage'], tier: 'enterprise' }, cliActor());
    return { mode, pair, proxy, databaseUrl, api: apiProcess, consumers, receiver, catalogId: catalog.id, key };
  } finally {
    await orm.close();
  }
}

const readiness = async (service: ServiceProcess) => checkedFetch(`${service.opsUrl}/readyz`);

/**
 * The primary crashes; once both processes report the database away (as in a real failover, the
 * standby takes over only once the loss was noticed, and clients meet the outage), the standby
 * is promoted and the proxy moves to it, cutting what still went to the old address.
 */
async function failOver(bed: Bed): Promise<{ crashedAt: number; retargetedAt: number }> {
  const crashedAt = Date.now();
  await bed.pair.stopPrimary('immediate');
  for (const service of [bed.api, bed.consumers]) {
    await eventually(async () => {
      const ready = await readiness(service);
      return (ready.response.status === 503 && ready.body.checks.database === 'error') || undefined;
    }, `${service.opsUrl}/readyz to report the database away`, RECOVER_MS);
  }
  await bed.pair.promote();
  bed.proxy.retarget(portOf(bed.pair.standbyUrl));
  return { crashedAt, retargetedAt: Date.now() };
}

/** The relay and the dispatcher LISTEN on the new primary, and the relay holds every lane there. */
async function assertConsumersReattached(count: (text: string, params?: unknown[]) => Promise<number>): Promise<void> {
  await eventually(async () => (await count('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = ANY($1)',
    [[`LISTEN ${OUTBOX_CHANNEL}`, `LISTEN ${DELIVERY_CHANNEL}`]])) === 2 || undefined, 'the relay and the dispatcher to LISTEN on the new primary', RECOVER_MS);
  const lanes = OUTBOX_LANES + (LEGACY_LANE === -1 ? 1 : 0);
  await eventually(async () => (await count(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
    AND classid = ${LANE_LOCK_SPACE}::int4::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)) === lanes || undefined,
  'the relay to hold every lane again', RECOVER_MS);
}

/** Error-level log lines of both processes, counted by process, component and message. */
function errorLinesByKind(bed: Bed): Map<string, number> {
  const kinds = new Map<string, number>();
  for (const [name, service] of [['api', bed.api], ['consumers', bed.consumers]] as const) {
    for (const line of service.output().stdout.split('\n').filter((l) => /"level":(50|60)/.test(l))) {
      const { component, msg } = JSON.parse(line) as { component?: string; msg?: string };
      const kind = `${name} ${component ?? '-'}: ${String(msg).slice(0, 100)}`;
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
  }
  return kinds;
}

/** What a client saw: 2xx, or 503 with Retry-After while the database was away; never a 500, never no answer. */
function clientFigures(t: TestContext, bed: Bed, upserts: UpsertLoad, times: { crashedAt: number; retargetedAt: number }) {
  const answers = upserts.answers();
  const unavailable = answers.filter((a) => a.status === 503);
  assert.deepEqual(answers.filter((a) => !a.ok && a.status !== 503).map((a) => `${a.externalId}: ${a.status} ${a.error}`), [], 'answers other than 2xx and 503');
  assert.deepEqual(unavailable.filter((a) => a.retryAfter === null || a.error !== 'service_unavailable').map((a) => a.externalId), [], '503s other than service_unavailable with Retry-After');
  assert.deepEqual(upserts.contractViolations(), [], 'answers that do not match the contract');
  const firstAfter = answers.filter((a) => a.ok && a.answeredAt > times.retargetedAt).sort((a, b) => a.answeredAt - b.answeredAt)[0]!;
  const since = (at: number) => at - times.crashedAt;
  t.diagnostic(`${bed.mode}: ${answers.length} upserts, by status ${JSON.stringify(Object.fromEntries([...Map.groupBy(answers, (a) => a.status)].map(([s, all]) => [s, all.length])))}; `
    + `first 2xx ${firstAfter.answeredAt - times.retargetedAt} ms after the retarget (${since(firstAfter.answeredAt)} ms after the crash); `
    + `503s (ms after the crash): ${unavailable.map((a) => `${since(a.sentAt)}..${since(a.answeredAt)}`).join(', ') || 'none'}`);
  return { acknowledged: answers.filter((a) => a.ok), unavailable: unavailable.length };
}

/** The drill; `synchronous` decides whether a lost acknowledged upsert fails the test. Answers how many were lost. */
async function failoverDrill(t: TestContext, synchronous: boolean): Promise<{ acknowledged: number; lost: number }> {
  const began = Date.now();
  const bed = await startBed(t, synchronous);
  const opts = clientOptions(bed.api.url, bed.key);
  const hook = expectData(await api.createWebhook({ url: bed.receiver.url(HOOK), events: ['*'] }, {}, opts), 201);
  bed.receiver.secrets(HOOK, [hook.secret]);

  // The load: an import with bad lines, and single upserts in a loop.
  const file = jsonl(Array.from({ length: LINES }, (_, i) => item(`F-${i}`, i % BAD_EVERY === 0 ? { gtin13: '1' } : { price: i / 100 })));
  const created = expectData(await api.createImport({ fileSizeBytes: file.length }, {}, opts), 201);
  assert.equal((await upload(created.uploadUrl, file)).response.status, 200);
  const upserts = startUpsertLoad(`${bed.api.url}/api/v1/catalog`, bed.key);
  expectData(await api.startImport(created.jobId, opts), 202);
  const jobNow = async (): Promise<ImportJob> => expectData(await api.getImport(created.jobId, opts), 200);
  const before = await eventually(async () => {
    const job = await jobNow();
    assert.ok(!TERMINAL.includes(job.status), `the import ended before the crash: ${JSON.stringify(job)}`);
    return job.status === 'processing' && job.counts.processed >= CRASH_AT_LINES && upserts.succeeded() > 0 ? job : undefined;
  }, 'the import to be under way', RECOVER_MS);
  const loadAt = Date.now();

  const times = await failOver(bed);
  t.diagnostic(`${bed.mode}: crashed at ${before.counts.processed}/${LINES} lines and ${upserts.succeeded()} upserts; promoted and retargeted ${times.retargetedAt - times.crashedAt} ms later`);
  await eventually(async () => upserts.answers().filter((a) => a.ok && a.sentAt > times.retargetedAt).length >= UPSERTS_AFTER || undefined,
    'upserts answered 2xx after the failover', RECOVER_MS);
  await upserts.stop();
  for (const service of [bed.api, bed.consumers]) {
    assert.ok(service.alive(), `${service.url} is still running`);
    await eventually(async () => {
      const ready = await readiness(service);
      return (ready.response.status === 200 && ready.body.status === 'ready') || undefined;
    }, `${service.opsUrl}/readyz to answer ready`, RECOVER_MS);
  }
  const recoveredAt = Date.now();

  const sql = new pg.Client({ connectionString: bed.databaseUrl });
  sql.on('error', () => undefined);
  await sql.connect();
  t.after(() => sql.end().catch(() => undefined));
  assert.equal((await sql.query('SELECT pg_is_in_recovery() AS r')).rows[0].r, false, 'the proxy reaches the promoted standby');
  const count = async (text: string, params: unknown[] = []) => (await sql.query<{ n: number }>(text, params)).rows[0]!.n;
  await assertConsumersReattached(count);

  // The import resumed from its cursor: every line counted once, one event per stored line.
  const job = await eventually(async () => {
    const now = await jobNow();
    return TERMINAL.includes(now.status) ? now : undefined;
  }, 'the import to end', SETTLE_MS);
  assert.equal(job.status, 'completed_with_errors', JSON.stringify(job));
  assert.deepEqual(job.counts, { total: LINES, processed: LINES, succeeded: LINES - BAD, failed: BAD, unchanged: 0 });
  assert.equal(await count('SELECT processing_failures::int AS n FROM import_jobs WHERE id = $1', [created.jobId]), 0, 'the failover counted as no processing failure');
  const runs = bed.consumers.output().stdout.split('\n').filter((line) => line.includes('import running in this process') && line.includes(created.jobId)).length;
  assert.ok(runs >= 2, `the import was taken up again after the failover (${runs} runs)`);
  assert.equal(await count(`SELECT count(*)::int AS n FROM outbox_events WHERE type = 'item.created' AND payload::jsonb ->> 'catalogId' = $1
    AND payload::jsonb -> 'data' ->> 'externalSystem' = 'erp'`, [bed.catalogId]), LINES - BAD, 'one item.created per good line: a batch cut by the crash went with its events');

  // Every upsert answered 2xx is stored as it was answered.
  const { acknowledged, unavailable } = clientFigures(t, bed, upserts, times);
  const stored = new Map((await sql.query<{ external_id: string; id: string; price: number }>(
    'SELECT external_id, id::text, price::float8 AS price FROM items WHERE catalog_id = $1 AND external_system = $2', [bed.catalogId, 'pos'])).rows.map((r) => [r.external_id, r]));
  const lost = acknowledged.filter((a) => stored.get(a.externalId)?.id !== a.serviceId || stored.get(a.externalId)?.price !== a.price);
  if (synchronous) assert.deepEqual(lost.map((a) => a.externalId), [], 'acknowledged upserts lost with synchronous replication');

  // Every item event the database holds reached the webhook, signed; duplicates share their event id.
  await eventually(async () => (await count('SELECT count(*)::int AS n FROM outbox WHERE sent_at IS NULL')) === 0 || undefined, 'the outbox to drain', SETTLE_MS);
  const itemEvents = new Set((await sql.query<{ id: string }>(`SELECT event_id AS id FROM outbox_events WHERE type LIKE 'item.%' AND payload::jsonb ->> 'catalogId' = $1`,
    [bed.catalogId])).rows.map((r) => r.id));
  const receipts = () => bed.receiver.receipts(HOOK).filter((r) => r.event.type.startsWith('item.'));
  await eventually(async () => {
    const received = new Set(receipts().map((r) => r.event.id));
    return [...itemEvents].every((id) => received.has(id)) || undefined;
  }, `${itemEvents.size} item events delivered`, SETTLE_MS);
  assert.ok(bed.receiver.receipts(HOOK).every((r) => r.signedWith.includes(0)), 'every delivery is signed');
  assert.equal(await count(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'exhausted'`), 0, 'no delivery exhausted');
  const deliveredIds = new Set(receipts().map((r) => r.event.id));
  const duplicates = receipts().length - deliveredIds.size;
  // Delivered events of writes the failover took back: import batches commit without waiting for
  // the flush (docs/design.md, "How the import consumer works"); asynchronous, any write.
  const undone = [...deliveredIds].filter((id) => !itemEvents.has(id)).length;
  const settledAt = Date.now();

  // Once the backlog is out, a change reaches its webhook within seconds.
  const probeAt = Date.now();
  expectData(await api.upsertItem({ externalSystem: 'pos', externalId: 'after-failover', name: 'After the failover' }, opts), 201);
  await bed.receiver.waitFor('the webhook of an upsert after the failover', (all) => all.some((r) => r.event.type === 'item.created' && r.event.resourceId === 'after-failover'), PROBE_MS);
  const probeMs = Date.now() - probeAt;
  for (const service of [bed.api, bed.consumers]) assert.ok(service.alive(), `${service.url} is still running`);

  const errors = errorLinesByKind(bed);
  t.diagnostic(`${bed.mode}: ${acknowledged.length} upserts acknowledged, ${lost.length} of them missing after the failover; ${unavailable} answered 503; `
    + `${itemEvents.size} item events delivered, ${duplicates} duplicate deliveries, ${undone} delivered events of writes the failover undid; `
    + `import taken up ${runs - 1} time(s) after the crash; a new upsert's webhook in ${probeMs} ms`);
  t.diagnostic(`${bed.mode}: set-up and load ${loadAt - began} ms, failover to ready ${recoveredAt - loadAt} ms, import and deliveries settled ${settledAt - recoveredAt} ms`);
  t.diagnostic(`${bed.mode}: ${[...errors.values()].reduce((a, b) => a + b, 0)} error log lines${[...errors].map(([kind, n]) => `\n  ${n} × ${kind}`).join('')}`);
  return { acknowledged: acknowledged.length, lost: lost.length };
}

test('synchronous replication: the primary crashes under load, nothing acknowledged is lost and every process recovers without a restart', async (t) => {
  await failoverDrill(t, true);
});

test('asynchronous replication: the same drill recovers; acknowledged upserts the standby had not received are counted', async (t) => {
  const { acknowledged, lost } = await failoverDrill(t, false);
  t.diagnostic(`async: ${lost} of ${acknowledged} acknowledged upserts missing after the failover (replication lag at the crash decides; often 0 on loopback)`);
});
