// Traces over OTLP/HTTP as a collector receives them: protobuf by default, JSON when OTEL_EXPORTER_OTLP_PROTOCOL asks for it.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { testRuntime } from '../helpers/runtime.ts';
import { spawnService } from '../helpers/spawned-service.ts';

const FILE = import.meta.filename;
// Spans leave in the exporter's batches (every 200 ms here); a safety net against an export that never comes.
const EXPORT_SAFETY_NET_MS = 60_000;

interface Export { path: string; contentType: string; body: Buffer }
const exports: Export[] = [];
const collector = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    exports.push({ path: req.url ?? '', contentType: req.headers['content-type'] ?? '', body: Buffer.concat(chunks) });
    res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' }).end();
  });
});

before(() => new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve)));
after(() => new Promise<void>((resolve) => collector.close(() => resolve())));

/** Starts the api with `env`, upserts an item, and returns the first export that names the upsert's span. */
async function exportOfAnUpsert(env: Record<string, string>): Promise<Export> {
  const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  const service = await spawnService(FILE, testRuntime(), { env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '200', ...env }, serveArgs: ['--role', 'api'] });
  try {
    const tenant = await service.newTenant();
    const externalId = `OTLP-${Date.now()}`;
    expectData(await api.upsertItem({ externalSystem: 'erp', externalId, name: 'Traced' }, clientOptions(service.url, tenant.key)), 201);
    const began = Date.now();
    while (Date.now() - began < EXPORT_SAFETY_NET_MS) {
      const found = exports.find((e) => e.body.includes('upsertItem'));
      if (found) return found;
      await delay(100);
    }
    assert.fail(`no export named the upsert's span; exports seen: ${exports.length}`);
  } finally {
    await service.stop();
  }
}

test('by default the api exports its spans as OTLP protobuf to <endpoint>/v1/traces', async () => {
  exports.length = 0;
  const sent = await exportOfAnUpsert({});
  assert.equal(sent.path, '/v1/traces');
  assert.equal(sent.contentType, 'application/x-protobuf');
  // Protobuf carries strings as their UTF-8 bytes: the process's service name and the span's name are in the body, and it is no JSON.
  assert.ok(sent.body.includes('catalog-api'), 'the service name');
  assert.throws(() => JSON.parse(sent.body.toString('utf8')));
});

test('OTEL_EXPORTER_OTLP_PROTOCOL=http/json exports OTLP JSON', async () => {
  exports.length = 0;
  const sent = await exportOfAnUpsert({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
  assert.equal(sent.path, '/v1/traces');
  assert.equal(sent.contentType, 'application/json');
  const { resourceSpans } = JSON.parse(sent.body.toString('utf8')) as {
    resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> }; scopeSpans: Array<{ spans: Array<{ name: string; kind: number }> }> }>;
  };
  const names = resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((span) => span.name)));
  assert.ok(names.includes('upsertItem'), names.join(', '));
  const service = resourceSpans[0]!.resource.attributes.find((a) => a.key === 'service.name');
  assert.equal(service?.value.stringValue, 'catalog-api');
});
