// The operations port: /metrics only there, probes on both ports, /readyz's checks cached, and a consumers-only process scrapeable.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { cachedReadiness } from '../../platform/http/ops.ts';
import { freePort } from '../../scripts/free-port.ts';
import { checkedFetch } from '../helpers/contract-check.ts';
import { startConsumersProcess } from '../helpers/consumers-process.ts';
import { metricValue } from '../helpers/metrics.ts';
import { startTestService } from '../helpers/service.ts';
import type { TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
const children = new Set<ChildProcess>();

before(async () => {
  service = await startTestService(FILE);
});
after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await service?.close();
});

test('/metrics is served on the operations port only; /healthz and /readyz on both', async () => {
  assert.notEqual(new URL(service.opsUrl).port, new URL(service.url).port);
  assert.equal(new URL(service.opsUrl).hostname, '127.0.0.1', 'loopback unless OPS_HOST says otherwise');
  const onApi = await checkedFetch(`${service.url}/metrics`);
  assert.equal(onApi.response.status, 404);
  assert.equal(onApi.body.error.code, 'not_found');
  const scraped = await fetch(`${service.opsUrl}/metrics`);
  assert.equal(scraped.status, 200);
  assert.match(scraped.headers.get('content-type')!, /^text\/plain/);
  assert.match(await scraped.text(), /^# TYPE catalog_http_requests_total counter$/m);
  for (const base of [service.url, service.opsUrl]) {
    const health = await checkedFetch(`${base}/healthz`);
    assert.deepEqual([health.response.status, health.body], [200, { status: 'ok' }], base);
    const ready = await checkedFetch(`${base}/readyz`);
    assert.equal(ready.response.status, 200, `${base}: ${JSON.stringify(ready.body)}`);
    assert.equal(ready.body.status, 'ready');
  }
  // The readiness checks as gauges, for the alert on a dependency that is down.
  assert.equal(await metricValue(service.opsUrl, 'catalog_dependency_up', { dependency: 'database' }), 1);
  assert.equal(await metricValue(service.opsUrl, 'catalog_dependency_up', { dependency: 'kafka' }), 1);
  // Scrapes and probes are counted like API requests.
  assert.ok(((await metricValue(service.opsUrl, 'catalog_http_requests_total', { operation: 'getMetrics', status: '200' })) ?? 0) >= 1);
});

test('the operations port answers anything else in the error envelope', async () => {
  const missing = await fetch(`${service.opsUrl}/api/v1/catalog/items`);
  assert.equal(missing.status, 404);
  const missingBody = await missing.json() as { success: boolean; error: { code: string; requestId: string } };
  assert.equal(missingBody.success, false);
  assert.equal(missingBody.error.code, 'not_found');
  assert.match(missingBody.error.requestId, /^req_/);
  const wrong = await fetch(`${service.opsUrl}/metrics`, { method: 'POST', body: 'x' });
  assert.equal(wrong.status, 405);
  assert.equal(wrong.headers.get('allow'), 'GET, HEAD');
  assert.equal((await wrong.json() as { error: { code: string } }).error.code, 'method_not_allowed');
});

test('a flood of readiness probes runs the dependency checks once a second', async () => {
  let checks = 0;
  const readiness = cachedReadiness({ orm: service.orm, kafkaReachable: async () => { checks += 1; return true; } });
  const answers = await Promise.all(Array.from({ length: 200 }, () => readiness()));
  assert.equal(checks, 1, 'concurrent probes share one check');
  assert.ok(answers.every((answer) => answer.database === 'ok' && answer.kafka === 'ok'));
  await readiness();
  assert.equal(checks, 1, 'an answer is reused within the second');
  await delay(1100);
  await readiness();
  assert.equal(checks, 2, 'after a second the dependencies are checked again');
});

test('a consumers-only process serves its own counters on its operations port', async () => {
  const opsPort = await freePort();
  const child = await startConsumersProcess({
    file: FILE, databaseUrl: service.databaseUrl, name: 'consumers', children,
    env: { ROLE: 'consumers', OPS_PORT: String(opsPort), KAFKA_BROKERS: service.kafka.brokers.join(','), KAFKA_TOPIC_PREFIX: service.config.kafkaTopicPrefix },
  });
  const opsUrl = `http://127.0.0.1:${opsPort}`;
  const scraped = await fetch(`${opsUrl}/metrics`);
  assert.equal(scraped.status, 200);
  const text = await scraped.text();
  for (const name of ['catalog_import_lines_total', 'catalog_webhook_delivery_attempts_total']) assert.match(text, new RegExp(`^# TYPE ${name} counter$`, 'm'));
  assert.equal(await metricValue(opsUrl, 'catalog_outbox_parked_records'), 0);
  for (const name of ['catalog_import_failures_total', 'catalog_webhooks_disabled_total', 'catalog_media_jobs_total']) assert.match(text, new RegExp(`^# TYPE ${name} counter$`, 'm'));
  // The lag of each consumer group the process runs, once the groups have joined.
  const group = `${service.config.kafkaTopicPrefix}catalog.imports`;
  let lag: number | undefined;
  for (const began = Date.now(); lag === undefined && Date.now() - began < 60_000; await delay(500)) {
    lag = await metricValue(opsUrl, 'catalog_kafka_consumer_lag_messages', { group, topic: `${service.config.kafkaTopicPrefix}catalog.imports.v1` });
  }
  assert.equal(lag, 0, 'no import is waiting');
  const ready = await fetch(`${opsUrl}/readyz`);
  assert.equal(ready.status, 200, await ready.text());
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  await exited;
});
