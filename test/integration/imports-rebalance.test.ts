// Scaling the consumers out mid-import: the group's rebalance hands the running job over at its batch boundary, and nothing counts it as a failure.
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
async function consumers(name: string): Promise<{ child: ChildProcess; log: () => string }> {
  const child = await startConsumersProcess({ file: FILE, databaseUrl: service.databaseUrl, env: { STORAGE_DIR }, name, children });
  let log = '';
  child.stdout!.on('data', (chunk: Buffer) => { log += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { log += chunk.toString(); });
  return { child, log: () => log };
}

test('a consumers process joining mid-import: the job is handed over, not failed, and ends exactly as the file says', async () => {
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
  assert.match(logs, /import handed over/, 'the rebalance reached the running job');
  assert.doesNotMatch(logs, /import processing failed/, 'a rebalance is not a failure');
  assert.ok(!/"level":50/.test(logs), `no error logged:\n${logs.split('\n').filter((l) => l.includes('"level":50')).slice(0, 3).join('\n')}`);
});
