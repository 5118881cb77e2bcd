// One trace from an upsert to every attempt of its webhook delivery, read back from a real Zipkin server, across the api and consumers processes.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import * as api from '../../generated/client.ts';
import { startZipkin } from '../../scripts/zipkin.ts';
import type { RunningZipkin } from '../../scripts/zipkin.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { startConsumersProcess } from '../helpers/consumers-process.ts';
import { item, jsonl, runImport } from '../helpers/imports.ts';
import { testRuntime } from '../helpers/runtime.ts';
import { spawnService } from '../helpers/spawned-service.ts';
import type { SpawnedService } from '../helpers/spawned-service.ts';
import type { Tenant } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
// Spans reach Zipkin in the exporter's batches; a safety net against a trace that never arrives.
const TRACE_SAFETY_NET_MS = 3 * 60_000;

interface ZipkinSpan {
  traceId: string;
  id: string;
  parentId?: string;
  name: string;
  kind?: string;
  localEndpoint?: { serviceName?: string };
  tags?: Record<string, string>;
}

const storageDir = mkdtempSync(join(tmpdir(), 'catalog-traces-'));
let zipkin: RunningZipkin;
let service: SpawnedService;
let receiver: Receiver;
let tenant: Tenant;
const children = new Set<ChildProcess>();

before(async () => {
  zipkin = await startZipkin();
  receiver = await startReceiver();
  const tracing = {
    OTEL_TRACES_EXPORTER: 'zipkin', OTEL_EXPORTER_ZIPKIN_ENDPOINT: `${zipkin.url}/api/v2/spans`, OTEL_BSP_SCHEDULE_DELAY: '200',
    WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_DELAYS_MS: '0,300,300,300,300,300,300,300',
    // Both processes read the uploaded import files.
    STORAGE_DIR: storageDir,
  };
  service = await spawnService(FILE, testRuntime(), { env: tracing, serveArgs: ['--role', 'api'] });
  await startConsumersProcess({
    file: FILE, databaseUrl: service.databaseUrl, name: 'consumers', children,
    env: { ...tracing, ROLE: 'consumers', KAFKA_TOPIC_PREFIX: service.topicPrefix, KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '' },
  });
  tenant = await service.newTenant();
});
after(async () => {
  for (const child of children) {
    const gone = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM');
    await gone;
  }
  await service?.stop();
  await receiver?.close();
  await zipkin?.stop();
  rmSync(storageDir, { recursive: true, force: true });
});

/** The trace's spans once `complete` says they are all there. */
async function traceOf(traceId: string, complete: (spans: ZipkinSpan[]) => boolean): Promise<ZipkinSpan[]> {
  const began = Date.now();
  let spans: ZipkinSpan[] = [];
  while (Date.now() - began < TRACE_SAFETY_NET_MS) {
    const response = await fetch(`${zipkin.url}/api/v2/trace/${traceId}`);
    spans = response.status === 200 ? await response.json() as ZipkinSpan[] : [];
    if (complete(spans)) return spans;
    await delay(500);
  }
  assert.fail(`the trace did not complete within ${TRACE_SAFETY_NET_MS} ms: ${JSON.stringify(spans.map((s) => [s.name, s.localEndpoint?.serviceName]))}`);
}

test('an upsert, its event and both attempts of its webhook delivery, the first one failed, are one trace continuing the caller\'s', async () => {
  const hook = expectData(await api.createWebhook({ url: receiver.url('/traced'), events: ['item.created'] }, {}, clientOptions(service.url, tenant.key)), 201);
  receiver.secrets('/traced', [hook.secret]);
  receiver.script('/traced', [{ status: 500 }, { status: 200 }]);
  const traceId = randomBytes(16).toString('hex');
  const callerSpan = randomBytes(8).toString('hex');
  const opts = clientOptions(service.url, tenant.key, { traceparent: `00-${traceId}-${callerSpan}-01` });
  expectData(await api.upsertItem(item(`TRACE-${Date.now()}`), opts), 201);

  const receipts = await receiver.waitFor('two attempts', (all) => all.filter((r) => r.path === '/traced').length >= 2, TRACE_SAFETY_NET_MS);
  // The receiver gets the attempt's context: same trace, each attempt its own span.
  const given = receipts.map((r) => String(r.headers.traceparent).split('-'));
  assert.deepEqual(given.map((parts) => parts[1]), [traceId, traceId]);
  assert.notEqual(given[0]![2], given[1]![2]);

  const spans = await traceOf(traceId, (all) => all.filter((s) => s.name === 'webhook attempt').length >= 2
    && all.some((s) => s.name === 'upsertitem') && all.some((s) => s.kind === 'CONSUMER') && all.some((s) => s.kind === 'PRODUCER'));
  const byId = new Map(spans.map((s) => [s.id, s]));
  const parentOf = (span: ZipkinSpan) => (span.parentId === undefined ? undefined : byId.get(span.parentId));
  const service_ = (span: ZipkinSpan | undefined) => span?.localEndpoint?.serviceName;
  const tree = JSON.stringify(spans.map((s) => `${service_(s)} ${s.kind ?? ''} ${s.name} <- ${parentOf(s)?.name ?? s.parentId ?? 'root'}`));

  // Zipkin lower-cases span names.
  const request = spans.find((s) => s.name === 'upsertitem' && s.kind === 'SERVER')!;
  assert.equal(request.parentId, callerSpan, 'the incoming traceparent is continued');
  assert.equal(service_(request), 'catalog-api');
  assert.equal(request.tags?.['http.response.status_code'], '201');
  // The request's writes are group commits: their statements are in the group's span, in the first request's trace.
  const underRequest = (s: ZipkinSpan): boolean => s.parentId === request.id || (parentOf(s) !== undefined && underRequest(parentOf(s)!));
  const statements = spans.filter((s) => s.name.startsWith('db ') && underRequest(s));
  for (const group of ['key count', 'upsert group']) {
    assert.ok(statements.some((s) => parentOf(s)?.name === group), `the request's ${group} has its statements: ${tree}`);
  }
  assert.ok(statements.every((s) => service_(s) === 'catalog-api'));

  const sent = spans.filter((s) => s.kind === 'PRODUCER' && s.name === 'send catalog.events.v1');
  assert.equal(sent.length, 1);
  assert.equal(parentOf(sent[0]!), request, 'the relay\'s send continues the request');
  assert.equal(service_(sent[0]), 'catalog-consumers');

  const fanOut = spans.filter((s) => s.kind === 'CONSUMER');
  assert.equal(fanOut.length, 1);
  assert.equal(parentOf(fanOut[0]!), sent[0], 'the fan-out continues the Kafka record');
  assert.equal(service_(fanOut[0]), 'catalog-consumers');

  const attempts = spans.filter((s) => s.name === 'webhook attempt').sort((a, b) => Number(a.tags?.['catalog.delivery.attempt']) - Number(b.tags?.['catalog.delivery.attempt']));
  assert.deepEqual(attempts.map((a) => [parentOf(a), a.kind, a.tags?.['catalog.delivery.attempt'], a.tags?.['http.response.status_code']]),
    [[fanOut[0], 'CLIENT', '1', '500'], [fanOut[0], 'CLIENT', '2', '200']]);
  assert.ok(attempts[0]!.tags?.error !== undefined, 'the failed attempt is marked failed');
  assert.equal(attempts[1]!.tags?.error, undefined);
  assert.deepEqual(given.map((parts) => parts[2]), attempts.map((a) => a.id), 'each attempt carried its own span');
});

test('an import is one trace: its start request, its work message, the job, each batch, and the events its items caused', async () => {
  const traceId = randomBytes(16).toString('hex');
  const callerSpan = randomBytes(8).toString('hex');
  const opts = clientOptions(service.url, tenant.key, { traceparent: `00-${traceId}-${callerSpan}-01` });
  const job = await runImport(opts, jsonl([item(`IMP-${Date.now()}-1`), item(`IMP-${Date.now()}-2`)]));
  assert.equal(job.status, 'completed');

  // A job's span ends, and is exported, after its batches' spans.
  const expected = ['startimport', 'send catalog.imports.v1', 'process catalog.imports.v1', 'import job', 'import batch'];
  // The items' events were written by the batch: their publication is in its trace, under it.
  const sendsUnderBatch = (all: ZipkinSpan[]) => {
    const byId = new Map(all.map((s) => [s.id, s]));
    const batch = all.find((s) => s.name === 'import batch');
    const under = (s: ZipkinSpan | undefined): boolean => s !== undefined && (s.parentId === batch?.id || under(byId.get(s.parentId ?? '')));
    return all.filter((s) => s.name === 'send catalog.events.v1' && under(s));
  };
  const spans = await traceOf(traceId, (all) => expected.every((name) => all.some((s) => s.name === name)) && sendsUnderBatch(all).length > 0);
  const byId = new Map(spans.map((s) => [s.id, s]));
  const parentOf = (span: ZipkinSpan | undefined) => (span?.parentId === undefined ? undefined : byId.get(span.parentId));
  const tree = JSON.stringify(spans.map((s) => `${s.localEndpoint?.serviceName} ${s.name} <- ${parentOf(s)?.name ?? s.parentId ?? 'root'}`));
  const named = (name: string) => spans.find((s) => s.name === name);
  const start = named('startimport');
  assert.equal(start?.parentId, callerSpan, tree);
  assert.equal(parentOf(named('send catalog.imports.v1')), start, tree);
  assert.equal(parentOf(named('process catalog.imports.v1')), named('send catalog.imports.v1'), tree);
  assert.equal(parentOf(named('import job')), named('process catalog.imports.v1'), tree);
  assert.equal(parentOf(named('import batch')), named('import job'), tree);
  assert.equal(named('import job')?.localEndpoint?.serviceName, 'catalog-consumers');
  // The batch's events went to Kafka in one request: one send span for them all, not one each.
  const sends = sendsUnderBatch(spans);
  assert.deepEqual(sends.map((s) => s.tags?.['messaging.batch.message_count']), ['2'], tree);
});

