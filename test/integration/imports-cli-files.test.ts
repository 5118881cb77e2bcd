// `catalog import` after the import: the results file, the failed lines whole, the failures by kind with the next step, --retry and --job.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { item, jsonl, startImportService } from '../helpers/imports.ts';
import { cliCommand } from '../helpers/runtime.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'catalog-cli-files-'));
let service: TestService;

before(async () => {
  service = await startImportService(FILE);
});
after(async () => {
  await service?.close();
});

async function catalogImport(tenant: Tenant, args: string[]) {
  try {
    const { stdout, stderr } = await run(...cliCommand(['import', ...args]), {
      env: { PATH: process.env.PATH, CATALOG_API_URL: service.url, CATALOG_API_KEY: tenant.key },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const path = (name: string) => join(dir, name);
const readJsonl = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);

test('import --results --failed-lines: every line told, the failed ones whole, what failed and what to do next; the corrected lines import', async () => {
  const tenant = await service.newTenant();
  const long = JSON.stringify(item('C-2', { description: 'd'.repeat(5000), gtin13: '4006381333932' }));
  const broken = '{"externalSystem":"erp","externalId":"C-4","name":';
  writeFileSync(path('items.jsonl'), jsonl([item('C-1'), long, item('C-3'), broken]));
  const first = await catalogImport(tenant, [path('items.jsonl'), '--results', path('results.jsonl'), '--failed-lines', path('failed.jsonl')]);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.stdout.trim().split('\n').at(-1), 'total 4, succeeded 2, unchanged 0, failed 2');
  const jobId = first.stdout.split('\t')[0]!;
  const results = readJsonl(path('results.jsonl'));
  assert.deepEqual(results.map((r) => [r.jobId, r.lineNumber, r.status, r.externalId]),
    [[jobId, 1, 'created', 'C-1'], [jobId, 2, 'failed', 'C-2'], [jobId, 3, 'created', 'C-3'], [jobId, 4, 'failed', 'C-4']]);
  assert.equal(results[0]!.serviceId, expectData(await api.getItem('erp', 'C-1', clientOptions(service.url, tenant.key)), 200).serviceId);
  assert.equal(readFileSync(path('failed.jsonl'), 'utf8'), `${long}\n${broken}\n`);
  assert.match(first.stderr, /^failed lines: validation 2$/m);
  assert.match(first.stderr, /^ {2}line 2: gtin13: /m);
  assert.match(first.stderr, /^ {2}line 4: line: not valid JSON/m);
  assert.ok(first.stderr.includes(`next: correct the lines in ${path('failed.jsonl')} and import it: \`catalog import ${path('failed.jsonl')} --wait\``), first.stderr);
  assert.ok(first.stderr.includes(`\`catalog import --retry ${jobId} --wait\``), first.stderr);

  writeFileSync(path('failed.jsonl'), jsonl([item('C-2', { description: 'd'.repeat(5000) }), item('C-4')]));
  const fixed = await catalogImport(tenant, [path('failed.jsonl'), '--wait']);
  assert.equal(fixed.code, 0, fixed.stderr);
  assert.equal(fixed.stdout.trim().split('\n').at(-1), 'total 2, succeeded 2, unchanged 0, failed 0');
  assert.doesNotMatch(fixed.stderr, /failed lines|next:/);

  // An ended job's files, later: without --failed-lines the next step says how to get them.
  const attached = await catalogImport(tenant, ['--job', jobId, '--failed-lines', path('again.jsonl')]);
  assert.equal(attached.code, 0, attached.stderr);
  assert.equal(readFileSync(path('again.jsonl'), 'utf8'), `${long}\n${broken}\n`);
  const bare = await catalogImport(tenant, [path('items.jsonl'), '--wait']);
  assert.ok(bare.stderr.includes('--failed-lines failed.jsonl`, correct them and import that file'), bare.stderr);
});

test('import --retry JOB_ID imports a job\'s failed lines again as they were, once what they depend on changed', async () => {
  const tenant = await service.newTenant();
  const opts = clientOptions(service.url, tenant.key);
  expectData(await api.upsertItem(item('HOLDER', { sku: 'TAKEN' }), opts), 201);
  writeFileSync(path('conflict.jsonl'), jsonl([item('K-1'), item('K-2', { sku: 'TAKEN' })]));
  const first = await catalogImport(tenant, [path('conflict.jsonl'), '--wait']);
  assert.match(first.stderr, /^failed lines: conflict 1$/m);
  const jobId = first.stdout.split('\t')[0]!;
  expectData(await api.upsertItem(item('HOLDER', { sku: 'FREED' }), opts), 200);
  const retried = await catalogImport(tenant, ['--retry', jobId, '--wait']);
  assert.equal(retried.code, 0, retried.stderr);
  assert.match(retried.stdout, new RegExp(`^\\S+\\tqueued\\tretry of ${jobId}\\t`, 'm'));
  assert.equal(retried.stdout.trim().split('\n').at(-1), 'total 1, succeeded 1, unchanged 0, failed 0');
  assert.equal(expectData(await api.getItem('erp', 'K-2', opts), 200).sku, 'TAKEN');

  const usage = await catalogImport(tenant, [path('conflict.jsonl'), '--retry', jobId]);
  assert.equal(usage.code, 2);
});
