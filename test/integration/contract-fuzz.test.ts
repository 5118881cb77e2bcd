// Contract-driven fuzzing: thousands of generated requests per runtime, none may get a 5xx or an answer the contract does not allow.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { contract } from '../helpers/contract-check.ts';
import { contractOperations, fuzzRequests } from '../helpers/fuzz-requests.ts';
import type { FuzzRequest, Seeds } from '../helpers/fuzz-requests.ts';
import { jsonText } from '../helpers/fuzz-values.ts';
import { outsideMatchers, problemsOf, report } from '../helpers/fuzz-report.ts';
import type { Failure } from '../helpers/fuzz-report.ts';
import { testRuntime } from '../helpers/runtime.ts';
import { spawnService } from '../helpers/spawned-service.ts';
import type { Runtime, SpawnedService } from '../helpers/spawned-service.ts';

const FILE = import.meta.filename;
// Fixed, so a run is reproducible; FUZZ_SEED explores other corners, FUZZ_ONLY replays some requests.
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const RUNS = Number(process.env.FUZZ_RUNS ?? 5000);
const ONLY = process.env.FUZZ_ONLY?.split(',').map(Number);
// The suite's runtime (TEST_RUNTIME): `npm test` runs this file once under each.
const runtimes = (process.env.FUZZ_RUNTIMES?.split(',') ?? [testRuntime()]) as Runtime[];
// Enough to keep the service busy without one client starving the machine's two cores.
const IN_FLIGHT = 8;
// Not a speed assertion: a guard so one request that never gets an answer cannot hang the suite.
// It is far above the server's own limits (the slowest legitimate request here is a bulk upsert
// of a few items), so hitting it means the service stopped answering.
const STALL_MS = 120_000;

const SEEDS: Seeds = {
  externalSystems: ['fz-erp'],
  externalIds: ['A-1', 'A-2', 'A-3', 'S-1'],
  spareExternalIds: ['D-1', 'D-2', 'D-3'],
};

const replayCommand = (runtime: Runtime) => (indexes: number[]) =>
  `FUZZ_SEED=${SEED} FUZZ_RUNTIMES=${runtime} FUZZ_ONLY=${indexes.join(',')} node --test --test-global-setup=test/helpers/global-setup.ts test/integration/contract-fuzz.test.ts`;

interface Keys { full: string; read: string }

async function call(service: SpawnedService, key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${service.apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  assert.ok(response.status < 300, `seeding ${method} ${path}: ${response.status} ${text}`);
  return (JSON.parse(text) as { data: Record<string, unknown> }).data;
}

/** Items, webhooks, a delivery and import jobs the generated requests can name. */
async function seed(service: SpawnedService, key: string): Promise<Record<string, string[]>> {
  for (const externalId of [...SEEDS.externalIds, ...SEEDS.spareExternalIds]) {
    await call(service, key, 'POST', '/items/upsert', { externalSystem: 'fz-erp', externalId, name: `Seeded ${externalId}`, trackStock: externalId === 'S-1', price: 10 });
  }
  const webhooks: string[] = [];
  for (let i = 0; i < 4; i += 1) {
    webhooks.push((await call(service, key, 'POST', '/webhooks', { url: `https://hooks.example.invalid/${i}`, events: ['*'] })).id as string);
  }
  const delivery = await call(service, key, 'POST', `/webhooks/${webhooks[0]}/test`);
  // A job with a file (one good line, one bad) that runs to the end, and jobs still waiting for theirs.
  const file = `${jsonText({ externalSystem: 'fz-erp', externalId: 'I-1', name: 'Imported' })}\n{"externalSystem":"fz-erp"}\n`;
  const job = await call(service, key, 'POST', '/imports', { fileSizeBytes: Buffer.byteLength(file) });
  const put = await fetch(job.uploadUrl as string, { method: 'PUT', headers: { 'content-type': 'application/x-ndjson' }, body: file });
  assert.ok(put.status < 300, `seeding the upload: ${put.status} ${await put.text()}`);
  await call(service, key, 'POST', `/imports/${job.jobId}/start`);
  const uploads = [];
  for (let i = 0; i < 3; i += 1) uploads.push(new URL((await call(service, key, 'POST', '/imports', { fileSizeBytes: 200 })).uploadUrl as string));
  return {
    jobId: [job.jobId as string],
    webhookId: [webhooks[0]!],
    spareWebhookId: webhooks.slice(1),
    deliveryId: [delivery.deliveryId as string],
    storagePath: uploads.map((u) => u.pathname.slice('/storage/v1/upload/'.length)),
    expires: uploads.map((u) => u.searchParams.get('expires')!),
    signature: uploads.map((u) => u.searchParams.get('signature')!),
  };
}

function authorization(request: FuzzRequest, keys: Keys): string | undefined {
  switch (request.auth) {
    case 'full': return `Bearer ${keys.full}`;
    case 'read': return `Bearer ${keys.read}`;
    case 'bogus': return 'Bearer cat_live_00000000000000000000000000000000';
    case 'malformed': return ['Bearer', 'Basic Zm9vOmJhcg==', `bearer  ${keys.full}`, `Bearer ${keys.full}x`, 'Bearer \u00e9\u00e9'][request.target.length % 5];
    default: return undefined;
  }
}

async function fuzz(service: SpawnedService, runtime: Runtime, keys: Keys, known: Record<string, string[]>, requests: Array<[number, FuzzRequest]>) {
  const { backend } = await contract();
  const operations = contractOperations(backend.definition);
  const responses = new Map(operations.map((op) => [op.operationId, Object.keys((backend.definition as never as { paths: Record<string, Record<string, { responses: object }>> }).paths[op.path]![op.method.toLowerCase()]!.responses)]));
  const outside = outsideMatchers(operations, responses);
  const failures: Failure[] = [];
  const statuses = new Map<number | string, number>();
  const slowest: Array<{ ms: number; what: string }> = [];
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const [index, request] = requests[next]!;
      next += 1;
      // Seeded values, picked by position so a replay sends the same ones.
      const target = request.target.replace(/\{\{(\w+)\}\}/g, (_, name: string) => known[name]![index % known[name]!.length]!);
      const url = `${service.url}${target}`;
      const headers: Record<string, string> = { ...request.headers };
      const auth = authorization(request, keys);
      if (auth !== undefined) headers.authorization = auth;
      const body = request.body === undefined ? undefined
        : 'text' in request.body ? request.body.text
        : 'raw' in request.body ? request.body.raw.make()
        : Buffer.from(request.body.bytes);
      let answer;
      const sent = performance.now();
      try {
        const response = await fetch(url, { method: request.method, headers, body, signal: AbortSignal.timeout(STALL_MS) });
        answer = { status: response.status, headers: response.headers, text: await response.text() };
      } catch (error) {
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        const problem = `no answer: ${cause?.code ?? (error as Error).name} ${cause?.message ?? (error as Error).message}`;
        failures.push({ index, request, target, status: 'no answer', problem });
        statuses.set('no answer', (statuses.get('no answer') ?? 0) + 1);
        continue;
      }
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      slowest.push({ ms: performance.now() - sent, what: `#${index} ${request.operation} ${request.method} → ${answer.status}` });
      if (slowest.length > 20) slowest.sort((a, b) => b.ms - a.ms).splice(5);
      for (const problem of await problemsOf(request, url, answer, outside)) {
        const requestId = answer.headers.get('x-request-id');
        failures.push({ index, request, target, status: answer.status, problem, ...(answer.status >= 500 && requestId ? { serverError: requestId } : {}) });
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  // The service's own words for each 5xx, found by request id in its log.
  for (const failure of failures) {
    if (failure.serverError === undefined) continue;
    const logged = service.logFor(failure.serverError).find((line) => line.err !== undefined) as { err?: { message?: string; type?: string } } | undefined;
    failure.serverError = logged?.err ? `${logged.err.type ?? 'Error'}: ${logged.err.message ?? ''}` : 'nothing logged';
  }
  const summary = [...statuses.entries()].sort().map(([s, n]) => `${s}: ${n}`).join(', ');
  const slow = slowest.sort((a, b) => b.ms - a.ms).slice(0, 5).map((s) => `${s.what} ${Math.round(s.ms)} ms`).join('; ');
  return { failures, summary, slow };
}

async function stillHealthy(service: SpawnedService, key: string): Promise<string[]> {
  const problems: string[] = [];
  if (!service.alive()) return [`the ${service.runtime} process exited: ${service.output().stderr.slice(-2000)}`];
  for (const path of ['/healthz', '/readyz']) {
    const response = await fetch(`${service.url}${path}`);
    if (response.status !== 200) problems.push(`${path} answered ${response.status}: ${await response.text()}`);
  }
  const upsert = await fetch(`${service.apiUrl}/items/upsert`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ externalSystem: 'fz-erp', externalId: `after-${Date.now()}`, name: 'Still writable' }),
  });
  if (upsert.status !== 201 && upsert.status !== 200) problems.push(`a valid upsert answered ${upsert.status}: ${await upsert.text()}`);
  return problems;
}

for (const runtime of runtimes) {
  test(`under ${runtime}, ${RUNS} generated requests (seed ${SEED}) get no 5xx and only answers the contract allows`, async (t) => {
    const phases: string[] = [];
    let mark = Date.now();
    const phase = (name: string) => { phases.push(`${name} ${((Date.now() - mark) / 1000).toFixed(1)} s`); mark = Date.now(); };
    const { backend } = await contract();
    const operations = contractOperations(backend.definition);
    const all = fc.sample(fuzzRequests(operations, SEEDS), { seed: SEED, numRuns: RUNS }).map((r, i) => [i, r] as [number, FuzzRequest]);
    const requests = ONLY ? all.filter(([i]) => ONLY.includes(i)) : all;
    if (!ONLY) {
      // Every operation of the contract is exercised, not only the common ones.
      const covered = new Set(requests.map(([, r]) => r.operation));
      assert.deepEqual(operations.map((op) => op.operationId).filter((id) => !covered.has(id)), [], 'operations the generator never produced');
    }

    phase('generate');
    const service = await spawnService(FILE, runtime, { env: { MEDIA_RETRIES: '0' } });
    phase('start');
    try {
      const full = await service.newTenant({ tier: 'enterprise' });
      const read = await service.newKey(full.catalogId, { scopes: ['catalog:read'], tier: 'enterprise' });
      const known = await seed(service, full.key);
      phase('seed');
      const started = Date.now();
      const { failures, summary, slow } = await fuzz(service, runtime, { full: full.key, read: read.key }, known, requests);
      t.diagnostic(`${runtime}: ${requests.length} requests in ${((Date.now() - started) / 1000).toFixed(1)} s; statuses ${summary}`);
      t.diagnostic(`${runtime}: slowest answers: ${slow}`);
      phase('requests');
      const unhealthy = await stillHealthy(service, full.key);
      const text = failures.length > 0 ? report(failures, replayCommand(runtime)) : '';
      assert.deepEqual(unhealthy, [], `the ${runtime} service is not healthy after the run\n${text}`);
      assert.equal(failures.length, 0, `seed ${SEED} under ${runtime}: ${text}`);
    } finally {
      phase('check');
      const { code, signal } = await service.stop();
      phase('stop');
      t.diagnostic(`${runtime} service stopped: code ${code}, signal ${signal}; ${phases.join(', ')}`);
      // A SIGTERM must end the service by itself (draining, committing offsets), whatever it was sent before.
      assert.equal(code, 0, `the ${runtime} service did not stop cleanly on SIGTERM (${signal ?? code}); its last words:\n${service.output().stdout.slice(-3000)}\n${service.output().stderr.slice(-3000)}`);
    }
  });
}
