// The compose stack seen from the host, as a Docker user meets it (run by `npm run test:containers`,
// not by `npm test`): a key made with the CLI inside the api container, an upsert, a bulk import
// through the signed upload address, a signed webhook to a receiver on the host, the event on the broker,
// and the console the image built.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { item, jsonl, waitForJob } from '../helpers/imports.ts';
import { readTopic } from '../helpers/kafka.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const run = promisify(execFile);

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: this check runs inside \`npm run test:containers\`, against the stack it starts`);
  return value;
}

const apiUrl = required('SMOKE_API_URL');
const brokers = required('SMOKE_KAFKA_BROKERS').split(',');
const s3PublicEndpoint = required('SMOKE_S3_PUBLIC_ENDPOINT');
const opsUrl = required('SMOKE_OPS_URL');
const prometheusUrl = required('SMOKE_PROMETHEUS_URL');
/** `docker-compose -p … -f …` (or `docker compose …`), the command that drives the stack. */
const compose: string[] = JSON.parse(required('SMOKE_COMPOSE'));
// Nothing here waits on this machine's speed: each wait is a safety net against a stack that
// never delivers (a cold consumer group joins within its session timeout, 30 s by default).
const DELIVERY_SAFETY_NET_MS = 5 * 60_000;

/** The CLI inside the api container; its answer is the last line of stdout (docs/cli.md). */
async function cli(...args: string[]): Promise<string> {
  const [command, ...rest] = compose;
  const { stdout } = await run(command!, [...rest, 'exec', '-T', 'api', 'node', 'cli/main.ts', ...args], { env: process.env });
  const last = stdout.trim().split('\n').at(-1);
  assert.ok(last, `the CLI printed nothing for ${args.join(' ')}`);
  return last;
}

let receiver: Receiver;
before(async () => {
  // Reached from the containers through compose.yaml's `host.docker.internal:host-gateway`.
  receiver = await startReceiver({ listenHost: '0.0.0.0', publicHost: 'host.docker.internal' });
});
after(async () => {
  await receiver?.close();
});

test('compose stack: CLI key, upsert, bulk import through the signed address, signed webhook, event on the broker', async () => {
  const name = `smoke-${process.pid}-${Date.now()}`;
  const catalogId = await cli('catalogs', 'create', '--name', name, '--owner-email', 'smoke@example.com');
  assert.match(catalogId, /^[0-9a-f-]{36}$/);
  const key = await cli('keys', 'create', '--catalog', name, '--scopes', 'catalog:read,catalog:write,bulk_import:manage,webhooks:manage', '--tier', 'pro');
  const opts = clientOptions(apiUrl, key);

  const hook = expectData(await api.createWebhook({ url: receiver.url('/smoke'), events: ['item.created'] }, {}, opts), 201);
  receiver.secrets('/smoke', [hook.secret]);

  const upserted = expectData(await api.upsertItem(item('SMOKE-1'), opts), 201);
  assert.equal(upserted.item.externalId, 'SMOKE-1');

  const file = jsonl([item('SMOKE-2'), item('SMOKE-3'), item('SMOKE-4')]);
  const created = expectData(await api.createImport({ fileSizeBytes: file.length }, {}, opts), 201);
  // Signed for the address the host reaches the store at (S3_PUBLIC_ENDPOINT), not the containers' one.
  assert.equal(new URL(created.uploadUrl).origin, s3PublicEndpoint);
  const put = await fetch(created.uploadUrl, { method: 'PUT', headers: { 'content-type': 'application/x-ndjson' }, body: new Uint8Array(file) });
  assert.equal(put.status, 200, await put.text());
  expectData(await api.startImport(created.jobId, opts), 202);
  const job = await waitForJob(opts, created.jobId);
  assert.equal(job.status, 'completed');
  assert.deepEqual(job.counts, { total: 3, processed: 3, succeeded: 3, failed: 0, unchanged: 0 });
  const listed = expectData(await api.listItems({ limit: 10 }, opts), 200);
  assert.deepEqual(listed.items.map((i) => i.externalId).sort(), ['SMOKE-1', 'SMOKE-2', 'SMOKE-3', 'SMOKE-4']);

  const receipts = await receiver.waitFor('four signed item.created deliveries', (all) => all.length >= 4, DELIVERY_SAFETY_NET_MS);
  for (const receipt of receipts) {
    assert.equal(receipt.event.type, 'item.created');
    assert.equal(receipt.event.catalogId, catalogId);
    assert.deepEqual(receipt.signedWith, [0], 'X-Service-Signature does not verify with the subscription secret');
    assert.equal(receipt.standardValid, true, 'the Standard Webhooks signature does not verify');
  }
  const delivered = new Map(receipts.map((r) => [r.event.id, r]));

  // The job's import.completed is published by the relay after the job row commits: read until it is there.
  let ours: Array<{ id: string; type: string; catalogId: string; resourceId: string }> = [];
  const reading = Date.now();
  while (!ours.some((event) => event.type === 'import.completed') && Date.now() - reading < DELIVERY_SAFETY_NET_MS) {
    const records = await readTopic(brokers, 'catalog.events.v1', DELIVERY_SAFETY_NET_MS);
    ours = records.map((r) => JSON.parse(r.value!.toString('utf8'))).filter((event) => event.catalogId === catalogId);
  }
  const itemEvents = ours.filter((event) => event.type === 'item.created');
  assert.deepEqual(itemEvents.map((event) => event.id).sort(), [...delivered.keys()].sort(), 'the broker and the webhook carry the same item events');
  for (const event of itemEvents) assert.deepEqual(JSON.parse(delivered.get(event.id)!.rawBody.toString('utf8')), event);
  assert.ok(ours.some((event) => event.type === 'import.completed' && event.resourceId === created.jobId), 'no import.completed event for the job');
});

/** A Prometheus HTTP API answer's `data`. */
async function prometheus<T>(path: string): Promise<T> {
  const response = await fetch(`${prometheusUrl}${path}`);
  assert.equal(response.status, 200, `${path}: ${response.status}`);
  return ((await response.json()) as { data: T }).data;
}

test('compose stack: the api\'s /metrics on its operations port only, Prometheus scraping both roles with the alerting rules loaded', async () => {
  const onApi = await fetch(`${apiUrl}/metrics`);
  assert.equal(onApi.status, 404);
  const scraped = await fetch(`${opsUrl}/metrics`);
  assert.equal(scraped.status, 200);
  assert.match(await scraped.text(), /^catalog_http_requests_total\{/m);

  const rules = await prometheus<{ groups: Array<{ name: string; rules: Array<{ name: string }> }> }>('/api/v1/rules');
  const loaded = rules.groups.flatMap((group) => group.rules.map((rule) => rule.name));
  for (const alert of ['CatalogOutboxLagging', 'CatalogHttp5xx', 'CatalogConsumerLag', 'CatalogDependencyDown']) assert.ok(loaded.includes(alert), `${alert} is not loaded: ${loaded.join(', ')}`);

  // The first test's import was counted by the consumers process, and only there; Prometheus
  // scrapes every 15 s, so this waits for a scrape or two.
  const began = Date.now();
  let answer: Array<{ metric: Record<string, string>; value: [number, string] }> = [];
  while (Date.now() - began < DELIVERY_SAFETY_NET_MS) {
    answer = (await prometheus<{ result: typeof answer }>(`/api/v1/query?query=${encodeURIComponent('sum by (role) (catalog_import_lines_total{job="catalog"})')}`)).result;
    const targets = await prometheus<{ activeTargets: Array<{ labels: Record<string, string>; health: string }> }>('/api/v1/targets');
    const up = new Set(targets.activeTargets.filter((t) => t.health === 'up').map((t) => t.labels.role));
    if (up.has('api') && up.has('consumers') && answer.some((sample) => sample.metric.role === 'consumers')) break;
    await new Promise((done) => setTimeout(done, 2000));
  }
  const byRole = new Map(answer.map((sample) => [sample.metric.role, Number(sample.value[1])]));
  assert.ok((byRole.get('consumers') ?? 0) >= 3, `import lines by role: ${JSON.stringify([...byRole])}`);
});

test('compose stack: the image serves the console it built, and a link minted by the CLI opens a session', async () => {
  const name = `smoke-console-${process.pid}-${Date.now()}`;
  await cli('catalogs', 'create', '--name', name, '--owner-email', 'smoke@example.com');
  const link = new URL(await cli('console', '--catalog', name, '--read-only'));
  assert.equal(link.search, '', 'no token in a query');
  const page = await fetch(`${apiUrl}/console/`);
  assert.equal(page.status, 200, 'the image built console/dist');
  assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(await page.text())?.[1];
  const asset = await fetch(`${apiUrl}${script}`, { headers: { 'accept-encoding': 'br' } });
  assert.deepEqual([asset.status, asset.headers.get('content-encoding')], [200, 'br']);
  const opened = expectData(await api.redeemConsoleLink({ link: link.hash.replace('#link=', '') }, clientOptions(apiUrl)), 201);
  assert.deepEqual(opened.scopes, ['catalog:read']);
});
