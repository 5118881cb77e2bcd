// Bulk import through the real flow (HTTP, local storage, outbox → Kafka → consumer): creation, upload, file rules, errors, events.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { allErrors, item, jsonl, runImport, startImportService, upload, waitForJob } from '../helpers/imports.ts';
import { metricValue } from '../helpers/metrics.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const opts = (tenant: Tenant, headers: Record<string, string> = {}) => clientOptions(service.url, tenant.key, headers);

/** catalog_import_lines_total by outcome; a series not yet counted reads 0. */
async function importLineMetrics() {
  const value = async (outcome: string) => (await metricValue(service.opsUrl, 'catalog_import_lines_total', { outcome })) ?? 0;
  return { created: await value('created'), updated: await value('updated'), unchanged: await value('unchanged'), failed: await value('failed') };
}

before(async () => {
  service = await startImportService(FILE);
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await sql?.end();
  await service?.close();
});

const events = async (catalogId: string, type: string) =>
  (await sql.query(`SELECT payload FROM outbox_events WHERE payload::jsonb ->> 'catalogId' = $1 AND payload::jsonb ->> 'type' = $2 ORDER BY batch_id, ord`, [catalogId, type]))
    .rows.map((r) => JSON.parse(r.payload));

test('createImport answers the creation result exactly; over 100 MB is a 400, a 6th concurrent job a 409', async () => {
  const tenant = await service.newTenant();
  const asked = Date.now() / 1000;
  const created = expectData(await api.createImport({ fileSizeBytes: 1234 }, {}, opts(tenant)), 201);
  const answered = Date.now() / 1000;
  assert.deepEqual(Object.keys(created).sort(), ['contentType', 'expiresIn', 'jobId', 'storagePath', 'uploadMethod', 'uploadUrl']);
  assert.equal(created.expiresIn, 3600);
  assert.equal(created.uploadMethod, 'PUT');
  assert.equal(created.contentType, 'application/x-ndjson');
  assert.equal(created.storagePath, `imports/${tenant.catalogId}/${created.jobId}.jsonl`);
  const url = new URL(created.uploadUrl);
  assert.equal(`${url.origin}${url.pathname}`, `${service.url}/storage/v1/upload/${encodeURIComponent(created.storagePath)}`);
  const expires = Number(url.searchParams.get('expires'));
  // An hour from when the service signed it, however long the answer took on a busy machine.
  assert.ok(expires >= Math.floor(asked) + 3600 && expires <= Math.ceil(answered) + 3600, `expires ${expires}, asked at ${asked}, answered at ${answered}`);
  assert.match(url.searchParams.get('signature') ?? '', /^[0-9a-f]{64}$/);
  const job = expectData(await api.getImport(created.jobId, opts(tenant)), 200);
  assert.equal(job.status, 'awaiting_upload');
  assert.equal(job.fileSizeBytes, 1234);
  assert.ok(Math.abs(Date.parse(job.uploadExpiresAt!) - expires * 1000) < 5000);

  const tooBig = expectStatus(await api.createImport({ fileSizeBytes: 100 * 1024 * 1024 + 1 }, {}, opts(tenant)), 400);
  assert.equal(tooBig.error.details?.[0]?.path, 'fileSizeBytes');
  for (let i = 0; i < 4; i += 1) expectData(await api.createImport({ fileSizeBytes: 10 }, {}, opts(tenant)), 201);
  const sixth = expectStatus(await api.createImport({ fileSizeBytes: 10 }, {}, opts(tenant)), 409);
  assert.equal(sixth.error.code, 'conflict');
  assert.equal(sixth.error.details?.[0]?.path, 'imports');
  // A cancelled job frees its place.
  expectData(await api.cancelImport(created.jobId, opts(tenant)), 200);
  expectData(await api.createImport({ fileSizeBytes: 10 }, {}, opts(tenant)), 201);
});

test('the signed upload address takes no key and refuses tampering, expiry, a wrong type and an oversized body', async () => {
  const tenant = await service.newTenant();
  const file = jsonl([item('U-1')]);
  const created = expectData(await api.createImport({ fileSizeBytes: file.length }, {}, opts(tenant)), 201);
  const url = new URL(created.uploadUrl);

  const tampered = new URL(url);
  tampered.searchParams.set('signature', 'f'.repeat(64));
  const forged = await upload(tampered.toString(), file);
  assert.equal(forged.response.status, 403);
  assert.equal(forged.body.error.code, 'forbidden');
  assert.ok(forged.body.error.requestId);

  const longer = new URL(url);
  longer.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 1000));
  assert.equal((await upload(longer.toString(), file)).response.status, 403);

  const past = Math.floor(Date.now() / 1000) - 10;
  const expired = new URL(url);
  expired.searchParams.set('expires', String(past));
  expired.searchParams.set('signature', createHmac('sha256', service.config.signingSecret).update(`PUT\n${created.storagePath}\n${past}`).digest('hex'));
  const late = await upload(expired.toString(), file);
  assert.equal(late.response.status, 403);
  assert.match(late.body.error.message, /expired/);

  const wrongType = await upload(created.uploadUrl, file, 'application/json');
  assert.equal(wrongType.response.status, 415);
  assert.equal(wrongType.body.error.code, 'unsupported_media_type');

  const big = await upload(created.uploadUrl, Buffer.concat([file, Buffer.from('x')]));
  assert.equal(big.response.status, 413);
  assert.equal(big.body.error.code, 'payload_too_large');

  // Without a Content-Length the size is checked while the body streams to disk.
  const streamed = await fetch(created.uploadUrl, {
    method: 'PUT', headers: { 'content-type': 'application/x-ndjson' }, duplex: 'half',
    body: Readable.toWeb(Readable.from([file, Buffer.from('{}\n')])) as ReadableStream,
  } as RequestInit);
  assert.equal(streamed.status, 413);
  assert.equal((await streamed.json()).error.code, 'payload_too_large');

  const noFile = expectStatus(await api.startImport(created.jobId, opts(tenant)), 409);
  assert.match(noFile.error.message, /no file/);

  const ok = await upload(created.uploadUrl, file);
  assert.equal(ok.response.status, 200);
  assert.deepEqual(ok.body.data, { storagePath: created.storagePath, sizeBytes: file.length });
  assert.ok(ok.response.headers.get('x-request-id'));
  const again = await upload(created.uploadUrl, file);
  assert.equal(again.response.status, 409);

  const wrongMethod = await fetch(created.uploadUrl, { method: 'POST' });
  assert.equal(wrongMethod.status, 405);
  assert.equal(wrongMethod.headers.get('allow'), 'PUT');

  const started = expectData(await api.startImport(created.jobId, opts(tenant)), 202);
  assert.ok(['queued', 'processing', 'completed'].includes(started.status));
  const twice = expectStatus(await api.startImport(created.jobId, opts(tenant)), 409);
  assert.equal(twice.error.code, 'conflict');
  const done = await waitForJob(opts(tenant), created.jobId);
  assert.equal(done.status, 'completed');
});

test('file rules, counters and line errors: BOM, CRLF, empty lines, bad JSON, bad UTF-8, a line over 1 MB; then a retry of the failed lines', async () => {
  const tenant = await service.newTenant();
  const valid = Array.from({ length: 240 }, (_, i) => item(`A-${100 + i}`, { tags: ['bulk'] }));
  const file = Buffer.concat([
    Buffer.from([0xef, 0xbb, 0xbf]),
    jsonl([item('A-1'), item('A-2')], '\r\n'),
    jsonl([
      '',
      '   ',
      '{"externalSystem":"erp","externalId":"BAD-JSON","name":',
      item('A-6', { gtin13: '123' }),
      item('A-7', { sku: 'SKU-A-1' }),
      Buffer.concat([Buffer.from('{"externalSystem":"erp","externalId":"BAD-UTF8","name":"caf'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
      `{"externalSystem":"erp","externalId":"LONG","name":"${'x'.repeat(1024 * 1024 + 10)}"}`,
      '[1,2]',
      { ...item('A-11'), colour: 'blue' },
      ...valid,
    ]).subarray(0, -1), // the last line has no LF
  ]);
  const linesBefore = await importLineMetrics();
  const job = await runImport(opts(tenant), file);
  assert.equal(job.status, 'completed_with_errors');
  assert.deepEqual(job.counts, { total: 249, processed: 249, succeeded: 242, failed: 7, unchanged: 0 });
  // /metrics counts the committed lines by outcome (this file's tests run one at a time).
  const linesAfter = await importLineMetrics();
  assert.deepEqual(Object.fromEntries(Object.entries(linesAfter).map(([k, v]) => [k, v - linesBefore[k as keyof typeof linesBefore]])),
    { created: 242, updated: 0, unchanged: 0, failed: 7 });
  assert.equal(job.errorCount, 7);
  assert.equal(job.progress, 100);
  assert.equal(job.failureReason, null);
  assert.equal(job.dryRunSummary, null);
  assert.ok(job.startedAt && job.finishedAt && Date.parse(job.createdAt) <= Date.parse(job.startedAt) && Date.parse(job.startedAt) <= Date.parse(job.finishedAt));

  const errors = await allErrors(opts(tenant), job.id, undefined, 2);
  assert.deepEqual(errors.map((e) => [e.lineNumber, e.errorType, e.externalId]), [
    [5, 'validation', 'BAD-JSON'], [6, 'validation', 'A-6'], [7, 'conflict', 'A-7'], [8, 'validation', 'BAD-UTF8'],
    [9, 'validation', 'LONG'], [10, 'validation', undefined], [11, 'validation', 'A-11'],
  ]);
  const byLine = new Map(errors.map((e) => [e.lineNumber, e]));
  assert.match(byLine.get(5)!.errorMessage, /^line: not valid JSON/);
  assert.equal(byLine.get(5)!.rawLine, '{"externalSystem":"erp","externalId":"BAD-JSON","name":');
  assert.match(byLine.get(6)!.errorMessage, /^gtin13: /);
  assert.equal(byLine.get(7)!.errorMessage, 'sku: SKU "SKU-A-1" is already used by the item with externalSystem "erp" and externalId "A-1".');
  assert.match(byLine.get(8)!.errorMessage, /^line: not valid UTF-8/);
  assert.match(byLine.get(9)!.errorMessage, /^line: longer than 1048576 bytes/);
  assert.equal(byLine.get(9)!.rawLine.length, 4096);
  assert.match(byLine.get(10)!.errorMessage, /^line: must be a JSON object/);
  assert.match(byLine.get(11)!.errorMessage, /^colour: /);
  assert.deepEqual((await allErrors(opts(tenant), job.id, 'conflict')).map((e) => e.lineNumber), [7]);
  const firstPage = expectData(await api.listImportErrors(job.id, { limit: 3 }, opts(tenant)), 200);
  assert.equal(firstPage.errors.length, 3);
  assert.ok(firstPage.nextCursor);

  const { rows } = await sql.query('SELECT external_id, sku FROM items WHERE catalog_id = $1 ORDER BY external_id', [tenant.catalogId]);
  assert.equal(rows.length, 242);
  assert.deepEqual(rows.slice(0, 2), [{ external_id: 'A-1', sku: 'SKU-A-1' }, { external_id: 'A-100', sku: 'SKU-A-100' }]);
  const [completed] = await events(tenant.catalogId, 'import.completed');
  assert.deepEqual(completed.data, { jobId: job.id, status: 'completed_with_errors', counts: job.counts, errorCount: 7, dryRun: false });
  assert.equal(completed.resourceId, job.id);
  assert.equal((await events(tenant.catalogId, 'item.created')).length, 242);

  // Retry: free the SKU line 7 wanted, and store line 7's item meanwhile through the API.
  expectData(await api.upsertItem(item('A-1', { sku: 'MOVED' }), opts(tenant)), 200);
  expectData(await api.upsertItem(item('A-7', { sku: 'SKU-A-1' }), opts(tenant)), 201);
  const retry = expectData(await api.retryImport(job.id, opts(tenant)), 201);
  assert.equal(retry.retryOf, job.id);
  assert.equal(retry.job.status, 'queued');
  assert.equal(retry.job.retryOf, job.id);
  assert.equal(retry.job.uploadExpiresAt, null);
  assert.equal(retry.storagePath, `imports/${tenant.catalogId}/${retry.jobId}.jsonl`);
  const retried = await waitForJob(opts(tenant), retry.jobId);
  assert.equal(retried.status, 'completed_with_errors');
  assert.deepEqual(retried.counts, { total: 7, processed: 7, succeeded: 0, failed: 6, unchanged: 1 });
  assert.deepEqual((await allErrors(opts(tenant), retry.jobId)).map((e) => [e.lineNumber, e.externalId ?? null]), [
    [1, 'BAD-JSON'], [2, 'A-6'], [4, 'BAD-UTF8'], [5, 'LONG'], [6, null], [7, 'A-11'],
  ]);
  const notTerminal = expectData(await api.createImport({ fileSizeBytes: 5 }, {}, opts(tenant)), 201);
  assert.equal(expectStatus(await api.retryImport(notTerminal.jobId, opts(tenant)), 409).error.code, 'conflict');
});

test('a re-import skips the lines it stored, by their exact bytes, yet applies an item\'s lines in file order and sees API changes', async () => {
  const tenant = await service.newTenant();
  // 300 lines in three batches; item X twice in the third, b after a.
  const lines = Array.from({ length: 300 }, (_, i) => item(`R-${String(i + 1).padStart(3, '0')}`));
  lines[249] = item('R-X', { name: 'X first', sku: 'SKU-R-X' });
  lines[259] = item('R-X', { name: 'X second', sku: 'SKU-R-X' });
  const file = jsonl(lines);
  const first = await runImport(opts(tenant), file);
  assert.deepEqual(first.counts, { total: 300, processed: 300, succeeded: 300, failed: 0, unchanged: 0 });
  const stored = async (id: string) =>
    (await sql.query('SELECT xmin::text, name, price::float AS price FROM items WHERE catalog_id = $1 AND external_id = $2', [tenant.catalogId, id])).rows[0];
  assert.equal((await stored('R-X')).name, 'X second');
  const untouched = await stored('R-001');

  // An API write makes the item differ from its line; the re-import must restore it.
  expectData(await api.upsertItem(item('R-150', { price: 99 }), opts(tenant)), 200);
  const again = await runImport(opts(tenant), file);
  assert.equal(again.status, 'completed');
  // R-150 restored; X's first line is not the one X was last written from, so both of X's lines apply, in order.
  assert.deepEqual(again.counts, { total: 300, processed: 300, succeeded: 3, failed: 0, unchanged: 297 });
  assert.equal((await stored('R-150')).price, 10);
  assert.equal((await stored('R-X')).name, 'X second');
  assert.deepEqual(await stored('R-001'), untouched);
  const updated = (await events(tenant.catalogId, 'item.updated')).map((e) => e.resourceId);
  assert.deepEqual(updated, ['R-X', 'R-150', 'R-150', 'R-X', 'R-X']);

  // A dry run counts known lines as unchanged and writes nothing, not even a fingerprint.
  const fingerprints = async () => (await sql.query(
    'SELECT external_id, xmin::text, encode(import_fingerprint, \'hex\') AS f FROM items WHERE catalog_id = $1 ORDER BY external_id', [tenant.catalogId])).rows;
  const before = await fingerprints();
  const dry = await runImport(opts(tenant), file, { dryRun: true });
  assert.deepEqual(dry.dryRunSummary, { created: 0, updated: 1, unchanged: 299, failed: 0 });
  assert.deepEqual(await fingerprints(), before);

  // The same bytes mean nothing in another catalog.
  const other = await service.newTenant();
  assert.deepEqual((await runImport(opts(other), file)).counts, { total: 300, processed: 300, succeeded: 300, failed: 0, unchanged: 0 });
});

test('lines read together as stored are re-checked after a transaction among them writes an item', async () => {
  const tenant = await service.newTenant();
  // Two batches of stored lines make the re-import read the rest (lines 201-700) together.
  const lines = Array.from({ length: 700 }, (_, i) => item(`K-${String(i + 1).padStart(3, '0')}`));
  lines[649] = item('K-X', { name: 'X latest', sku: 'SKU-K-X' });
  assert.equal((await runImport(opts(tenant), jsonl(lines))).status, 'completed');
  // Line 250 now writes X from other bytes, so line 650 (the line X was stored from) must apply again.
  lines[249] = item('K-X', { name: 'X earlier', sku: 'SKU-K-X' });
  const again = await runImport(opts(tenant), jsonl(lines));
  assert.deepEqual(again.counts, { total: 700, processed: 700, succeeded: 2, failed: 0, unchanged: 698 });
  const [x] = (await sql.query('SELECT name FROM items WHERE catalog_id = $1 AND external_id = $2', [tenant.catalogId, 'K-X'])).rows;
  assert.equal(x.name, 'X latest', 'the file\'s last line for X wins');
  const updated = (await events(tenant.catalogId, 'item.updated')).map((e) => e.resourceId);
  assert.deepEqual(updated, ['K-X', 'K-X']);
});

test('batches in the database together keep the file\'s order: a SKU freed, a SKU claimed, an item twice, a new category', async () => {
  const tenant = await service.newTenant();
  expectData(await api.upsertItem(item('P-MOVER', { sku: 'SKU-FREED' }), opts(tenant)), 201);
  // Four batches of new lines. Batch 2 shares no item or SKU with batch 1, so it may be in the
  // database while batch 1 is; batch 4 names an item and a SKU of batch 3, so it may not.
  const lines = Array.from({ length: 400 }, (_, i) => item(`P-${String(i + 1).padStart(3, '0')}`));
  lines[9] = item('P-MOVER', { sku: 'SKU-MOVED', category: { name: 'Blocker' } }); // batch 1 frees SKU-FREED...
  lines[19] = item('P-NEWCAT-1', { category: { name: 'Pipelined Category' } });
  lines[109] = item('P-TAKER', { sku: 'SKU-FREED' }); // ...which batch 2 takes
  lines[119] = item('P-NEWCAT-2', { category: { name: 'pipelined category' } });
  lines[209] = item('P-TWICE', { name: 'first' });
  lines[219] = item('P-CLAIMER', { sku: 'SKU-CLAIMED' });
  lines[309] = item('P-TWICE', { name: 'second' });
  lines[319] = item('P-LATE', { sku: 'SKU-CLAIMED' }); // the SKU is P-CLAIMER's since line 220
  // Batch 1's write waits for this uncommitted category of the same name, so batch 2's lookup
  // surely runs while batch 1 is in the database, before its commit frees SKU-FREED.
  const blocker = await sqlClient(service.databaseUrl);
  await blocker.query('BEGIN');
  await blocker.query(`INSERT INTO categories (id, catalog_id, name, name_key) VALUES (gen_random_uuid(), $1, 'Blocker', 'blocker')`, [tenant.catalogId]);
  const release = (async () => {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const waiting = await sql.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      if (waiting.rows.length > 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 500));
    await blocker.query('COMMIT');
    await blocker.end();
  })();
  const job = await runImport(opts(tenant), jsonl(lines));
  await release;
  assert.equal(job.status, 'completed_with_errors');
  assert.deepEqual(job.counts, { total: 400, processed: 400, succeeded: 399, failed: 1, unchanged: 0 });
  assert.deepEqual((await allErrors(opts(tenant), job.id)).map((e) => [e.lineNumber, e.errorType, e.externalId]), [[320, 'conflict', 'P-LATE']]);
  const { rows } = await sql.query(`SELECT i.external_id, i.sku, i.name, c.name AS category FROM items i LEFT JOIN categories c ON c.id = i.category_id
    WHERE i.catalog_id = $1 AND i.external_id = ANY($2) ORDER BY i.external_id`,
  [tenant.catalogId, ['P-MOVER', 'P-TAKER', 'P-TWICE', 'P-CLAIMER', 'P-NEWCAT-1', 'P-NEWCAT-2']]);
  assert.deepEqual(rows, [
    { external_id: 'P-CLAIMER', sku: 'SKU-CLAIMED', name: 'Item P-CLAIMER', category: 'Imported' },
    { external_id: 'P-MOVER', sku: 'SKU-MOVED', name: 'Item P-MOVER', category: 'Blocker' },
    { external_id: 'P-NEWCAT-1', sku: 'SKU-P-NEWCAT-1', name: 'Item P-NEWCAT-1', category: 'Pipelined Category' },
    { external_id: 'P-NEWCAT-2', sku: 'SKU-P-NEWCAT-2', name: 'Item P-NEWCAT-2', category: 'Pipelined Category' },
    { external_id: 'P-TAKER', sku: 'SKU-FREED', name: 'Item P-TAKER', category: 'Imported' },
    { external_id: 'P-TWICE', sku: 'SKU-P-TWICE', name: 'second', category: 'Imported' },
  ]);
  const categories = await sql.query('SELECT name FROM categories WHERE catalog_id = $1 ORDER BY name', [tenant.catalogId]);
  assert.deepEqual(categories.rows.map((r) => r.name), ['Blocker', 'Imported', 'Pipelined Category']);
  assert.deepEqual((await events(tenant.catalogId, 'item.updated')).map((e) => e.resourceId), ['P-MOVER', 'P-TWICE']);
  assert.equal((await events(tenant.catalogId, 'item.created')).length, 398);
});

test('a line the database refuses is a database line error; the rest of its batch is stored once, with one event each', async () => {
  const tenant = await service.newTenant();
  // A constraint only this test's item breaks: the write of its batch fails in Postgres, not in validation.
  const refused = `DB-REFUSED-${tenant.catalogId}`;
  const constraint = `test_refuse_${tenant.catalogId.replaceAll('-', '_')}`;
  await sql.query(`ALTER TABLE items ADD CONSTRAINT ${constraint} CHECK (external_id <> '${refused}') NOT VALID`);
  try {
    const lines = Array.from({ length: 150 }, (_, i) => item(`D-${String(i + 1).padStart(3, '0')}`));
    lines[41] = item(refused);
    const job = await runImport(opts(tenant), jsonl(lines));
    assert.equal(job.status, 'completed_with_errors');
    assert.deepEqual(job.counts, { total: 150, processed: 150, succeeded: 149, failed: 1, unchanged: 0 });
    const errors = await allErrors(opts(tenant), job.id);
    assert.deepEqual(errors.map((e) => [e.lineNumber, e.errorType, e.externalId]), [[42, 'database', refused]]);
    assert.match(errors[0]!.errorMessage, /database error/);
    const { rows } = await sql.query('SELECT count(*)::int AS n FROM items WHERE catalog_id = $1', [tenant.catalogId]);
    assert.equal(rows[0].n, 149);
    const created = (await events(tenant.catalogId, 'item.created')).map((e) => e.resourceId);
    assert.equal(created.length, 149, 'the rolled-back first attempt left no event behind');
    assert.equal(new Set(created).size, 149);
    assert.ok(!created.includes(refused));
  } finally {
    await sql.query(`ALTER TABLE items DROP CONSTRAINT ${constraint}`);
  }
});

test('a JSON array fails the job with a reason; every line failing fails it too; neither can be retried without failed lines', async () => {
  const tenant = await service.newTenant();
  const array = Buffer.from(`[\n  ${JSON.stringify(item('ARR-1'))},\n  ${JSON.stringify(item('ARR-2'))}\n]\n`);
  const job = await runImport(opts(tenant), array);
  assert.equal(job.status, 'failed');
  assert.match(job.failureReason ?? '', /JSON array/);
  assert.ok(job.finishedAt);
  const [failed] = await events(tenant.catalogId, 'import.failed');
  assert.equal(failed.data.status, 'failed');
  assert.equal(failed.data.reason, job.failureReason);
  assert.equal(expectStatus(await api.retryImport(job.id, opts(tenant)), 409).error.code, 'conflict');
  assert.equal((await sql.query('SELECT count(*)::int AS n FROM items WHERE catalog_id = $1', [tenant.catalogId])).rows[0].n, 0);

  const allBad = await runImport(opts(tenant), jsonl(['{', item('NO-NAME', { name: '' })]));
  assert.equal(allBad.status, 'failed');
  assert.match(allBad.failureReason ?? '', /every line failed/);
  assert.deepEqual(allBad.counts, { total: 2, processed: 2, succeeded: 0, failed: 2, unchanged: 0 });
});

test('a dry run reports counts and line errors and writes no item, category, brand, media or item event', async () => {
  const tenant = await service.newTenant();
  expectData(await api.upsertItem(item('D-1', { price: 1 }), opts(tenant)), 201);
  expectData(await api.upsertItem(item('D-2'), opts(tenant)), 201);
  const snapshot = async () => (await sql.query(
    `SELECT (SELECT count(*) FROM items WHERE catalog_id = $1)::int AS items,
      (SELECT count(*) FROM categories WHERE catalog_id = $1)::int AS categories,
      (SELECT count(*) FROM brands WHERE catalog_id = $1)::int AS brands,
      (SELECT count(*) FROM media_assets WHERE catalog_id = $1)::int AS media,
      (SELECT max(updated_at) FROM items WHERE catalog_id = $1) AS touched,
      (SELECT count(*) FROM outbox_events WHERE payload::jsonb ->> 'catalogId' = $2 AND payload::jsonb ->> 'type' NOT LIKE 'import.%')::int AS events`,
    [tenant.catalogId, tenant.catalogId])).rows[0];
  const before = await snapshot();
  const file = jsonl([
    item('D-1', { price: 2 }),
    item('D-2'),
    item('D-3', { brand: { name: 'Dry Brand' }, category: { name: 'Dry Category' }, media: [{ url: 'https://cdn.example.com/d3.jpg', role: 'primary', sortOrder: 0 }] }),
    item('D-4', { gtin13: '1' }),
  ]);
  const job = await runImport(opts(tenant), file, { dryRun: true });
  assert.equal(job.dryRun, true);
  assert.equal(job.status, 'completed_with_errors');
  assert.deepEqual(job.dryRunSummary, { created: 1, updated: 1, unchanged: 1, failed: 1 });
  assert.deepEqual(job.counts, { total: 4, processed: 4, succeeded: 2, failed: 1, unchanged: 1 });
  assert.deepEqual((await allErrors(opts(tenant), job.id)).map((e) => [e.lineNumber, e.errorType, e.externalId]), [[4, 'validation', 'D-4']]);
  assert.deepEqual(await snapshot(), before);
  const [completed] = await events(tenant.catalogId, 'import.completed');
  assert.equal(completed.data.dryRun, true);
});

test('cancel: an awaiting job at once, a processing job after its current batch; both emit import.failed', async () => {
  const tenant = await service.newTenant();
  const waiting = expectData(await api.createImport({ fileSizeBytes: 10 }, {}, opts(tenant)), 201);
  const cancelled = expectData(await api.cancelImport(waiting.jobId, opts(tenant)), 200);
  assert.equal(cancelled.status, 'cancelled');
  assert.equal(cancelled.failureReason, 'cancelled by request');
  assert.ok(cancelled.finishedAt);
  assert.equal(expectStatus(await api.cancelImport(waiting.jobId, opts(tenant)), 409).error.code, 'conflict');
  assert.equal(expectStatus(await api.startImport(waiting.jobId, opts(tenant)), 409).error.code, 'conflict');
  assert.equal(expectStatus(await api.getImport('01a1fe21-0b62-7221-b546-e93b0e704791', opts(tenant)), 404).error.code, 'not_found');

  const file = jsonl(Array.from({ length: 20_000 }, (_, i) => item(`C-${i}`)));
  const created = expectData(await api.createImport({ fileSizeBytes: file.length }, {}, opts(tenant)), 201);
  assert.equal((await upload(created.uploadUrl, file)).response.status, 200);
  expectData(await api.startImport(created.jobId, opts(tenant)), 202);
  await waitForJob(opts(tenant), created.jobId, (j) => j.counts.processed > 0);
  const stopped = expectData(await api.cancelImport(created.jobId, opts(tenant)), 200);
  assert.equal(stopped.status, 'cancelled');
  await new Promise((r) => setTimeout(r, 500));
  const settled = expectData(await api.getImport(created.jobId, opts(tenant)), 200);
  assert.equal(settled.status, 'cancelled');
  assert.ok(settled.counts.processed < 20_000, `processed ${settled.counts.processed}`);
  assert.equal(settled.counts.processed % 100, 0);
  const stored = (await sql.query(`SELECT count(*)::int AS n FROM items WHERE catalog_id = $1 AND external_id LIKE 'C-%'`, [tenant.catalogId])).rows[0].n;
  assert.equal(stored, settled.counts.succeeded);
  const failedEvents = await events(tenant.catalogId, 'import.failed');
  assert.deepEqual(failedEvents.map((e) => [e.data.jobId, e.data.status, e.data.reason]), [
    [waiting.jobId, 'cancelled', 'cancelled by request'], [created.jobId, 'cancelled', 'cancelled by request'],
  ]);
});

test('an upload window that lapses without a file cancels the job with import.failed', async () => {
  const tenant = await service.newTenant();
  const created = expectData(await api.createImport({ fileSizeBytes: 10 }, {}, opts(tenant)), 201);
  await sql.query(`UPDATE import_jobs SET upload_expires_at = now() - interval '1 second' WHERE id = $1`, [created.jobId]);
  const job = await waitForJob(opts(tenant), created.jobId);
  assert.equal(job.status, 'cancelled');
  assert.equal(job.failureReason, 'upload window expired without a file');
  const [failed] = await events(tenant.catalogId, 'import.failed');
  assert.equal(failed.data.reason, 'upload window expired without a file');
});

test('GET /imports lists newest first, filters by status and pages with a cursor', async () => {
  const tenant = await service.newTenant();
  const ids = [];
  for (let i = 0; i < 3; i += 1) ids.push(expectData(await api.createImport({ fileSizeBytes: 10 + i }, {}, opts(tenant)), 201).jobId);
  expectData(await api.cancelImport(ids[0]!, opts(tenant)), 200);
  const first = expectData(await api.listImports({ limit: 2 }, opts(tenant)), 200);
  assert.deepEqual(first.imports.map((j) => j.id), [ids[2], ids[1]]);
  const second = expectData(await api.listImports({ limit: 2, cursor: first.nextCursor! }, opts(tenant)), 200);
  assert.deepEqual(second.imports.map((j) => j.id), [ids[0]]);
  assert.equal(second.nextCursor, null);
  const waiting = expectData(await api.listImports({ status: 'awaiting_upload' }, opts(tenant)), 200);
  assert.deepEqual(waiting.imports.map((j) => j.id), [ids[2], ids[1]]);
  assert.equal(expectStatus(await api.listImports({ cursor: 'nonsense' }, opts(tenant)), 400).error.code, 'validation_error');
});

test('Idempotency-Key on POST /imports: the same key and body return the first job; another body is a 409', async () => {
  const tenant = await service.newTenant();
  const first = expectData(await api.createImport({ fileSizeBytes: 100 }, { idempotencyKey: 'import-key-1' }, opts(tenant)), 201);
  const repeat = expectData(await api.createImport({ fileSizeBytes: 100 }, { idempotencyKey: 'import-key-1' }, opts(tenant)), 201);
  assert.deepEqual(repeat, first);
  const other = expectStatus(await api.createImport({ fileSizeBytes: 101 }, { idempotencyKey: 'import-key-1' }, opts(tenant)), 409);
  assert.equal(other.error.code, 'conflict');
  assert.equal((await sql.query('SELECT count(*)::int AS n FROM import_jobs WHERE catalog_id = $1', [tenant.catalogId])).rows[0].n, 1);
});
