// Scaling the consumers out and in mid-import: a rebalance leaves running jobs alone, each process runs at most its share, and a stopping process hands its job over.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { startConsumersProcess } from '../helpers/consumers-process.ts';
import { sqlClient } from '../helpers/database.ts';
import { item, jsonl, startImportService, upload, waitForJob } from '../helpers/imports.ts';
import type { TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const STORAGE_DIR = mkdtempSync(join(tmpdir(), 'catalog-rebalance-storage-'));
const LINES = 30_000;
// Many batches, so that a process stopped while it runs one leaves the job mid-way, in the test of two jobs.
const JOB_LINES = 20_000;
let service: TestService;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const children = new Set<ChildProcess>();

before(async () => {
  service = await startImportService(FILE, { ROLE: 'api', STORAGE_DIR });
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await sql?.end();
  await service?.close();
});

/** A consumers process of the test's database and topics, its log kept. */
async function consumers(name: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; log: () => string }> {
  const child = await startConsumersProcess({ file: FILE, databaseUrl: service.databaseUrl, env: { STORAGE_DIR, ...env }, name, children });
  let log = '';
  child.stdout!.on('data', (chunk: Buffer) => { log += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { log += chunk.toString(); });
  return { child, log: () => log };
}

/** Stops a consumers process as an orchestrator would (SIGTERM) and waits for it to exit. */
async function stop(process: { child: ChildProcess }): Promise<void> {
  if (process.child.exitCode !== null) return;
  const exited = new Promise((resolve) => process.child.once('exit', resolve));
  process.child.kill('SIGTERM');
  await exited;
}

/** The jobs a process's log says it ran, in order. */
const ran = (log: string): string[] => [...log.matchAll(/"jobId":"([0-9a-f-]+)"[^\n]*import running in this process/g)].map((m) => m[1]!);

/** Error-level lines of a log, for a failure message. */
const errorsIn = (log: string): string => log.split('\n').filter((l) => l.includes('"level":50')).slice(0, 3).join('\n');

/** Creates, uploads and starts an import of `lines` items named with `prefix`. */
async function startJob(opts: ReturnType<typeof clientOptions>, prefix: string, lines: number): Promise<string> {
  const file = jsonl(Array.from({ length: lines }, (_, i) => item(`${prefix}-${i}`, { price: i / 100 })));
  const created = expectData(await api.createImport({ fileSizeBytes: file.length }, {}, opts), 201);
  assert.equal((await upload(created.uploadUrl, file)).response.status, 200);
  expectData(await api.startImport(created.jobId, opts), 202);
  return created.jobId;
}

test('a consumers process joining mid-import: the job runs on, not failed, and ends exactly as the file says', async () => {
  const tenant = await service.newTenant();
  const opts = clientOptions(service.url, tenant.key);
  const lines = Array.from({ length: LINES }, (_, i) => item(`B-${i}`, { price: i / 100 }));
  const file = jsonl(lines);
  const first = await consumers('first');
  const created = expectData(await api.createImport({ fileSizeBytes: file.length }, {}, opts), 201);
  assert.equal((await upload(created.uploadUrl, file)).response.status, 200);
  expectData(await api.startImport(created.jobId, opts), 202);

  await waitForJob(opts, created.jobId, (j) => j.counts.processed >= 2000);
  // A second member joins the group: every member gives its partitions up and takes new ones.
  const second = await consumers('second');
  const job = await waitForJob(opts, created.jobId);
  assert.equal(job.status, 'completed');
  assert.deepEqual(job.counts, { total: LINES, processed: LINES, succeeded: LINES, failed: 0, unchanged: 0 });
  const { rows } = await sql.query('SELECT processing_failures, (SELECT count(*)::int FROM items WHERE catalog_id = $2) AS items FROM import_jobs WHERE id = $1',
    [created.jobId, tenant.catalogId]);
  assert.deepEqual(rows[0], { processing_failures: 0, items: LINES });
  const logs = first.log() + second.log();
  assert.deepEqual(ran(logs), [created.jobId], 'one process ran the job from start to end: the rebalance did not interrupt it');
  assert.doesNotMatch(logs, /import processing failed/, 'a rebalance is not a failure');
  assert.ok(!/"level":50/.test(logs), `no error logged:\n${errorsIn(logs)}`);
  await Promise.all([first, second].map(stop));
});

test('IMPORT_JOBS_PER_PROCESS=1: two jobs run in two processes, and a stopped process hands its job to the other once it has room', async () => {
  const tenant = await service.newTenant();
  const opts = clientOptions(service.url, tenant.key);
  const one = { IMPORT_JOBS_PER_PROCESS: '1' };
  const first = await consumers('first-of-one', one);
  const second = await consumers('second-of-one', one);
  const jobA = await startJob(opts, 'A', JOB_LINES);
  const jobB = await startJob(opts, 'B', JOB_LINES);
  // Each job is held at its next batch's record from the moment it is seen running (the row lock
  // its gate waits for), so that neither can end before the stop, however fast the machine.
  const holder = await sqlClient(service.databaseUrl);
  let stopping: Promise<void>;
  let ranFirst: string[];
  let ranSecond: string[];
  try {
    await holder.query('BEGIN');
    for (const jobId of [jobA, jobB]) {
      await waitForJob(opts, jobId, (j) => j.counts.processed > 0);
      await holder.query('SELECT 1 FROM import_jobs WHERE id = $1 FOR UPDATE', [jobId]);
    }
    [ranFirst, ranSecond] = [ran(first.log()), ran(second.log())];
    assert.equal(ranFirst.length, 1, `the first process runs one job: ${ranFirst}`);
    assert.equal(ranSecond.length, 1, `the second process runs one job: ${ranSecond}`);
    assert.deepEqual([...ranFirst, ...ranSecond].sort(), [jobA, jobB].sort());
    // A graceful stop leaves the job at its batch boundary; the other process is full until its own job ends.
    stopping = stop(first);
  } finally {
    // Its transaction ends with it: the held batches go on.
    await holder.end();
  }
  await stopping;
  for (const jobId of [jobA, jobB]) {
    const job = await waitForJob(opts, jobId);
    assert.equal(job.status, 'completed');
    assert.deepEqual(job.counts, { total: JOB_LINES, processed: JOB_LINES, succeeded: JOB_LINES, failed: 0, unchanged: 0 });
  }
  assert.deepEqual(ran(second.log()), [ranSecond[0], ranFirst[0]], 'the second process took the handed-over job after its own');
  const { rows } = await sql.query('SELECT sum(processing_failures)::int AS failures, (SELECT count(*)::int FROM items WHERE catalog_id = $2) AS items FROM import_jobs WHERE id = ANY($1)',
    [[jobA, jobB], tenant.catalogId]);
  assert.deepEqual(rows[0], { failures: 0, items: 2 * JOB_LINES });
  const logs = first.log() + second.log();
  assert.ok(!/"level":50/.test(logs), `no error logged:\n${errorsIn(logs)}`);
  await stop(second);
});
