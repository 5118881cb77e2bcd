// Crash safety: a consumer process SIGKILLed in the middle of a 20,000-line import, or one that lost its job lock while a second one took the job over; the job ends exactly as the file says.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { RequestOpts } from '@oazapfts/runtime';
import { JOB_LOCK_SPACE } from '../../domain/imports/job-store.ts';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { IMPORT_STALL_MS, TERMINAL, item, jsonl, startImportService, upload, waitForJob } from '../helpers/imports.ts';
import { waitWhileProgressing } from '../helpers/progress.ts';
import { testEnv } from '../helpers/service.ts';
import type { TestService } from '../helpers/service.ts';
import { cliCommand } from '../helpers/runtime.ts';

const FILE = import.meta.filename;
const STORAGE_DIR = mkdtempSync(join(tmpdir(), 'catalog-crash-storage-'));
let service: TestService;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const children = new Set<ChildProcess>();


/** `catalog serve --role consumers` in a process of its own, on the api's database, topics and storage. */
function startConsumers(): ChildProcess {
  const child = spawn(...cliCommand(['serve', '--role', 'consumers']), {
    env: testEnv(FILE, service.databaseUrl, { STORAGE_DIR, ROLE: 'consumers' }) as NodeJS.ProcessEnv,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

before(async () => {
  service = await startImportService(FILE, { ROLE: 'api', STORAGE_DIR });
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await sql?.end();
  await service?.close();
});

/** The status of each line of the job's results file, by line number from 1 (a line missing or twice fails). */
async function resultStatuses(opts: RequestOpts, jobId: string): Promise<string[]> {
  const answer = await api.getImportResults(jobId, opts);
  assert.equal(answer.status, 200);
  const results = answer.data!.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { lineNumber: number; status: string });
  assert.deepEqual(results.map((r) => r.lineNumber), results.map((_, i) => i + 1));
  return results.map((r) => r.status);
}

test('SIGKILL mid-import: a new consumer resumes from the committed cursor; counts and items match the file exactly', async () => {
  const tenant = await service.newTenant();
  const opts = clientOptions(service.url, tenant.key);
  const lines = Array.from({ length: 20_000 }, (_, i) =>
    i % 997 === 5 ? item(`K-${i}`, { gtin13: '42' }) : item(`K-${i}`, { price: i / 100, tags: [`t${i % 13}`], category: { name: `Cat ${i % 7}` } }));
  const invalid = lines.filter((l) => l.gtin13 === '42').length;
  const file = jsonl(lines);
  const created = expectData(await api.createImport({ fileSizeBytes: file.length }, {}, opts), 201);
  assert.equal((await upload(created.uploadUrl, file)).response.status, 200);
  expectData(await api.startImport(created.jobId, opts), 202);

  const first = startConsumers();
  const midway = await waitForJob(opts, created.jobId, (j) => j.counts.processed >= 3000);
  // A processing job tells its pace: lines a second since it began, and the seconds left at that rate.
  if (midway.status === 'processing') {
    assert.ok(midway.linesPerSecond! > 0, JSON.stringify(midway));
    const left = (midway.counts.total - midway.counts.processed) / midway.linesPerSecond!;
    assert.ok(Math.abs(midway.etaSeconds! - left) <= 1, JSON.stringify(midway));
  }
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));
  const atKill = expectData(await api.getImport(created.jobId, opts), 200);
  assert.equal(atKill.status, 'processing', 'the kill must land mid-file');
  assert.ok(atKill.counts.processed >= midway.counts.processed && atKill.counts.processed < 20_000);

  startConsumers();
  const job = await waitForJob(opts, created.jobId);
  assert.equal(job.status, 'completed_with_errors');
  assert.deepEqual(job.counts, { total: 20_000, processed: 20_000, succeeded: 20_000 - invalid, failed: invalid, unchanged: 0 });
  assert.equal(job.errorCount, invalid);

  const { rows } = await sql.query('SELECT external_id, name, price::float8 AS price, sku FROM items WHERE catalog_id = $1', [tenant.catalogId]);
  const expected = lines.filter((l) => l.gtin13 !== '42');
  assert.equal(rows.length, expected.length);
  const stored = new Map(rows.map((r) => [r.external_id, r]));
  for (const line of expected) {
    const row = stored.get(line.externalId);
    assert.deepEqual(row && [row.name, row.price, row.sku], [line.name, line.price, line.sku], line.externalId);
  }
  const errors = (await sql.query('SELECT line_number FROM import_errors WHERE job_id = $1 ORDER BY 1', [created.jobId])).rows.map((r) => r.line_number);
  assert.deepEqual(errors, lines.flatMap((l, i) => (l.gtin13 === '42' ? [i + 1] : [])));
  // The results file holds every line once, resumed batches included.
  assert.deepEqual(await resultStatuses(opts, created.jobId), lines.map((l) => (l.gtin13 === '42' ? 'failed' : 'created')));
  // Rolled-back batches took their events with them: one item.created per stored item.
  const created_ = (await sql.query(`SELECT count(*)::int AS n FROM outbox_events WHERE payload::jsonb ->> 'catalogId' = $1 AND payload::jsonb ->> 'type' = 'item.created'`, [tenant.catalogId])).rows[0].n;
  assert.equal(created_, expected.length);
});

test('a consumer that lost its job lock while another took the job over: each batch commits once, counts and items match the file exactly', async () => {
  // Only this test's two consumers: the one left running by the test before goes.
  await Promise.all([...children].map((child) => new Promise((exited) => {
    child.once('exit', exited);
    child.kill('SIGKILL');
  })));
  const tenant = await service.newTenant();
  const opts = clientOptions(service.url, tenant.key);
  const lines = Array.from({ length: 50_000 }, (_, i) => item(`L-${i}`, { price: i / 100, category: { name: `Cat ${i % 5}` } }));
  const file = jsonl(lines);
  const created = expectData(await api.createImport({ fileSizeBytes: file.length }, {}, opts), 201);
  assert.equal((await upload(created.uploadUrl, file)).response.status, 200);
  expectData(await api.startImport(created.jobId, opts), 202);

  const lockHolder = async () => (await sql.query<{ pid: number }>(
    `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1 AND objsubid = 2`, [JOB_LOCK_SPACE])).rows[0]?.pid;
  startConsumers();
  await waitForJob(opts, created.jobId, (j) => j.counts.processed >= 2000);
  const first = await lockHolder();
  assert.ok(first, 'the first consumer holds the job lock');
  // Its lock connection dies (a network blip, a restarted pooler): it goes on with its batches,
  // while a second consumer, started now, finds the job's lock free and takes the job over (a
  // consumer started only now, cold, lets the first one commit the lines it starts from: the
  // counters statement's cursor check must stop one of them). The file is long enough for the
  // first one to be still at it when the second starts.
  await sql.query('SELECT pg_terminate_backend($1)', [first]);
  startConsumers();
  // Waits while the first one moves the job on; the job ending first fails the test below.
  const jobNow = async () => expectData(await api.getImport(created.jobId, opts), 200);
  let second: number | undefined;
  await waitWhileProgressing('the second consumer taking the job lock', async () => {
    second = await lockHolder();
    return (second !== undefined && second !== first) || TERMINAL.includes((await jobNow()).status);
  }, async () => (await jobNow()).counts, IMPORT_STALL_MS);
  assert.ok(second !== undefined && second !== first, 'the second consumer never took the job lock');
  const takenOver = await jobNow();
  assert.equal(takenOver.status, 'processing', 'the take-over must land mid-file, with the first consumer still at it');

  const job = await waitForJob(opts, created.jobId);
  assert.equal(job.status, 'completed');
  assert.deepEqual(job.counts, { total: 50_000, processed: 50_000, succeeded: 50_000, failed: 0, unchanged: 0 });
  const { rows } = await sql.query('SELECT external_id, price::float8 AS price FROM items WHERE catalog_id = $1', [tenant.catalogId]);
  assert.equal(rows.length, lines.length);
  const stored = new Map(rows.map((r) => [r.external_id, r.price]));
  for (const line of lines) assert.equal(stored.get(line.externalId), line.price, line.externalId);
  assert.deepEqual(await resultStatuses(opts, created.jobId), lines.map(() => 'created'));
  // A batch the first consumer wrote after the take-over committed nothing, events included.
  const events = (await sql.query(`SELECT count(*)::int AS n FROM outbox_events WHERE payload::jsonb ->> 'catalogId' = $1 AND payload::jsonb ->> 'type' = 'item.created'`, [tenant.catalogId])).rows[0].n;
  assert.equal(events, lines.length);
});
