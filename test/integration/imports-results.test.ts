// An import's files: every line's result (created, updated, unchanged, failed; a dry run's stored and incoming values) and the failed lines' original bytes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { resultsFile } from '../../domain/imports/results.ts';
import { createStorage } from '../../platform/storage/create-storage.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { item, jsonl, runImport, startImportService } from '../helpers/imports.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const opts = (tenant: Tenant) => clientOptions(service.url, tenant.key);

before(async () => {
  service = await startImportService(FILE);
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await sql?.end();
  await service?.close();
});

type Result = Record<string, unknown> & { lineNumber: number; status: string };

async function results(tenant: Tenant, jobId: string): Promise<Result[]> {
  const answer = await api.getImportResults(jobId, opts(tenant));
  assert.equal(answer.status, 200);
  const text = answer.data!;
  assert.ok(text.endsWith('\n'), 'every line ends in LF');
  const lines = text.split('\n').filter(Boolean);
  // Compact JSON, keys in the contract's order, whichever side rendered the line.
  for (const line of lines) assert.equal(line, JSON.stringify(JSON.parse(line)));
  return lines.map((line) => JSON.parse(line) as Result);
}

const stored = async (tenant: Tenant, id: string) => expectData(await api.getItem('erp', id, opts(tenant)), 200);

test('the results file tells every line: created, updated with its changed fields, unchanged, failed with its error', async () => {
  const tenant = await service.newTenant();
  const first = await runImport(opts(tenant), jsonl([item('R-1'), item('R-2'), '{"externalSystem":"erp","externalId":"R-3",', '', item('R-4', { sku: 'SKU-R-1' })]));
  assert.equal(first.status, 'completed_with_errors');
  assert.equal(first.resultsUrl, `/api/v1/catalog/imports/${first.id}/results`);
  assert.equal(first.failedLinesUrl, `/api/v1/catalog/imports/${first.id}/failed-lines`);
  assert.ok(first.linesPerSecond! > 0);
  assert.equal(first.etaSeconds, null);
  const r1 = await stored(tenant, 'R-1');
  assert.deepEqual(await results(tenant, first.id), [
    { lineNumber: 1, status: 'created', externalSystem: 'erp', externalId: 'R-1', serviceId: r1.serviceId, contentHash: r1.contentHash },
    { lineNumber: 2, status: 'created', externalSystem: 'erp', externalId: 'R-2', serviceId: (await stored(tenant, 'R-2')).serviceId, contentHash: (await stored(tenant, 'R-2')).contentHash },
    { lineNumber: 3, status: 'failed', externalId: 'R-3', errorType: 'validation', errorMessage: (await results(tenant, first.id))[2]!.errorMessage },
    { lineNumber: 5, status: 'failed', externalSystem: 'erp', externalId: 'R-4', errorType: 'conflict',
      errorMessage: 'sku: SKU "SKU-R-1" is already used by the item with externalSystem "erp" and externalId "R-1".' },
  ]);
  assert.match(String((await results(tenant, first.id))[2]!.errorMessage), /^line: not valid JSON/);

  // Line 1 the same bytes (proved stored by its fingerprint), line 2 a new price, line 3 new and
  // naming an image (its batch is written in a transaction rather than one statement).
  const second = await runImport(opts(tenant), jsonl([item('R-1'), item('R-2', { price: 12.5 }),
    item('R-5', { media: [{ url: 'http://127.0.0.1:9/never.jpg', role: 'primary', sortOrder: 0 }] })]));
  assert.equal(second.status, 'completed');
  const [one, two, three] = await results(tenant, second.id);
  assert.deepEqual(one, { lineNumber: 1, status: 'unchanged', externalSystem: 'erp', externalId: 'R-1', serviceId: r1.serviceId, contentHash: r1.contentHash });
  const r2 = await stored(tenant, 'R-2');
  assert.deepEqual(two, { lineNumber: 2, status: 'updated', externalSystem: 'erp', externalId: 'R-2', serviceId: r2.serviceId, contentHash: r2.contentHash, changedFields: ['price'] });
  assert.equal(three!.status, 'created');
  assert.equal(three!.serviceId, (await stored(tenant, 'R-5')).serviceId);

  // The whole file again, every line through the upsert path's lookup or fingerprints: unchanged.
  const again = await runImport(opts(tenant), jsonl([item('R-1'), item('R-2', { price: 12.5 })]));
  assert.deepEqual((await results(tenant, again.id)).map((r) => [r.status, r.serviceId]), [['unchanged', r1.serviceId], ['unchanged', r2.serviceId]]);
});

test('a dry run shows each would-be update with its stored and incoming values, and writes nothing', async () => {
  const tenant = await service.newTenant();
  await runImport(opts(tenant), jsonl([item('D-1', { description: 'old' }), item('D-2')]));
  const before = await stored(tenant, 'D-1');
  const dry = await runImport(opts(tenant), jsonl([item('D-1', { price: 11, description: null as unknown as string, tags: ['new'] }), item('D-2'), item('D-3')]), { dryRun: true });
  assert.equal(dry.status, 'completed');
  assert.ok(dry.resultsUrl);
  const [one, two, three] = await results(tenant, dry.id);
  assert.equal(one!.status, 'updated');
  assert.equal(one!.serviceId, before.serviceId);
  assert.deepEqual(one!.changedFields, ['description', 'price', 'tags']);
  assert.deepEqual(one!.changes, {
    price: { stored: 10, incoming: 11 }, description: { stored: 'old', incoming: null }, tags: { stored: [], incoming: ['new'] },
  });
  assert.equal(two!.status, 'unchanged');
  assert.equal(three!.status, 'created');
  assert.deepEqual(await stored(tenant, 'D-1'), before);
  expectStatus(await api.getItem('erp', 'D-3', opts(tenant)), 404);
});

test('the failed lines come back whole, byte for byte, and the files wait for the job to end', async () => {
  const tenant = await service.newTenant();
  // Longer than the 4 KB an error's rawLine keeps, and not valid UTF-8 at its end.
  const long = Buffer.concat([Buffer.from(JSON.stringify(item('F-1', { description: 'x'.repeat(6000), gtin13: '4006381333932' }))), Buffer.from([0xff])]);
  const file = jsonl([item('F-0'), long, '[1]', item('F-3')], '\r\n');
  const job = await runImport(opts(tenant), file);
  assert.equal(job.counts.failed, 2);
  const response = await fetch(`${service.url}${job.failedLinesUrl}`, { headers: { authorization: `Bearer ${tenant.key}` } });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/x-ndjson/);
  assert.deepEqual(Buffer.from(await response.arrayBuffer()), Buffer.concat([long, Buffer.from('\r\n[1]\r\n')]));

  const clean = await runImport(opts(tenant), jsonl([item('F-4')]));
  assert.equal(clean.failedLinesUrl, null);
  const empty = await fetch(`${service.url}/api/v1/catalog/imports/${clean.id}/failed-lines`, { headers: { authorization: `Bearer ${tenant.key}` } });
  assert.equal(await empty.text(), '');

  const waiting = expectData(await api.createImport({ fileSizeBytes: 10 }, {}, opts(tenant)), 201);
  for (const early of [await api.getImportResults(waiting.jobId, opts(tenant)), await api.getImportFailedLines(waiting.jobId, opts(tenant))]) {
    assert.equal(early.status, 409);
    assert.equal(JSON.parse(early.data!).error.details[0].path, 'status');
  }
  const pending = expectData(await api.getImport(waiting.jobId, opts(tenant)), 200);
  assert.deepEqual([pending.resultsUrl, pending.failedLinesUrl, pending.linesPerSecond, pending.etaSeconds], [null, null, null, null]);
});

test('a re-import that finds its lines stored by their bytes keeps its results small, and reads them back whole', async () => {
  const tenant = await service.newTenant();
  const lines: Array<object | string> = Array.from({ length: 1200 }, (_, i) => item(`K-${i}`, { tags: [`t${i % 7}`] }));
  lines.splice(600, 0, '', '   ');
  const file = jsonl(lines, '\r\n');
  const first = await runImport(opts(tenant), file);
  assert.equal(first.counts.succeeded, 1200);
  const again = await runImport(opts(tenant), file);
  assert.equal(again.counts.unchanged, 1200);
  // Every line kept as a code and an id, none rendered: created lines by the first job, and most
  // of the second job's proved stored by their fingerprints, whole runs of them in a row.
  const kept = async (jobId: string) => (await sql.query(`SELECT string_agg(outcomes, '' ORDER BY first_line) AS outcomes,
    count(lines)::int AS rendered, count(*)::int AS rows FROM import_results WHERE job_id = $1`, [jobId])).rows[0];
  assert.deepEqual(await kept(first.id), { outcomes: 'c'.repeat(1200), rendered: 0, rows: 12 });
  const { rows, ...rest } = await kept(again.id);
  assert.deepEqual(rest, { outcomes: 'n'.repeat(1200), rendered: 0 });
  assert.ok(rows < 12, `${rows} rows: no run of lines kept longer than a batch`);
  const before = await results(tenant, first.id);
  const after_ = await results(tenant, again.id);
  assert.equal(after_.length, 1200);
  // Before and after the blank lines, each line names its own item: lines 600 and 603 of the file are K-599 and K-600.
  const [k599, k600] = [await stored(tenant, 'K-599'), await stored(tenant, 'K-600')];
  assert.deepEqual(before.slice(599, 601), [
    { lineNumber: 600, status: 'created', externalSystem: 'erp', externalId: 'K-599', serviceId: k599.serviceId, contentHash: k599.contentHash },
    { lineNumber: 603, status: 'created', externalSystem: 'erp', externalId: 'K-600', serviceId: k600.serviceId, contentHash: k600.contentHash },
  ]);
  // The same lines, identities, ids and hashes as when they were created; blank lines not counted.
  assert.deepEqual(after_, before.map((r) => ({ ...r, status: 'unchanged' })));

  // The first job's twelve rows follow each other in its file: their results read it once, from its start.
  const storage = createStorage(service.config);
  const reads: number[] = [];
  const counted = new Proxy(storage, {
    get: (target, key) => (key === 'read'
      ? (path: string, offset?: number) => { reads.push(offset ?? 0); return target.read(path, offset); }
      : Reflect.get(target, key)),
  });
  let text = '';
  for await (const line of await resultsFile(service.orm.em.fork(), counted, tenant.catalogId, first.id)) text += line;
  assert.deepEqual(text.split('\n').filter(Boolean).map((line) => JSON.parse(line)), before);
  assert.deepEqual(reads, [0]);
});
