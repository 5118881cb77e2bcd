// `catalog import`: the CLI's whole import dance against the real service: splitting, waiting, 429s, the errors file.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { sqlClient } from '../helpers/database.ts';
import { item, jsonl, startImportService } from '../helpers/imports.ts';
import type { TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'catalog-cli-import-'));
let service: TestService;
let sql: Awaited<ReturnType<typeof sqlClient>>;

async function catalogImport(key: string | undefined, args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['cli/main.ts', 'import', ...args], {
      env: { PATH: process.env.PATH, CATALOG_API_URL: service.url, ...(key ? { CATALOG_API_KEY: key } : {}), ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

before(async () => {
  service = await startImportService(FILE);
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await sql?.end();
  await service?.close();
});

test('import --wait --errors splits a file over the part size into jobs and writes the errors with the file\'s line numbers', async () => {
  const tenant = await service.newTenant();
  const lines = Array.from({ length: 1500 }, (_, i) => (i === 1200 ? '{"externalSystem":"erp",' : item(`CLI-${i}`, i === 10 ? { gtin13: '7' } : {})));
  const path = join(dir, 'items.jsonl');
  writeFileSync(path, jsonl(lines));
  const errorsPath = join(dir, 'errors.jsonl');
  // Parts of at most 50 KB stand in for 100 MB: the same splitting, without a 100 MB upload in the suite.
  const result = await catalogImport(tenant.key, [path, '--wait', '--errors', errorsPath], { CATALOG_IMPORT_PART_BYTES: '50000' });
  assert.equal(result.code, 0, result.stderr);
  const jobLines = result.stdout.trim().split('\n');
  const queued = jobLines.filter((l) => l.split('\t')[1] === 'queued');
  assert.ok(queued.length >= 2, result.stdout);
  assert.match(result.stderr, /importing it as \d+ jobs/);
  assert.equal(jobLines.at(-1), 'total 1500, succeeded 1498, unchanged 0, failed 2');
  const errors = readFileSync(errorsPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(errors.map((e) => [e.lineNumber, e.errorType, e.externalId]), [[11, 'validation', 'CLI-10'], [1201, 'validation', undefined]]);
  assert.equal((await sql.query('SELECT count(*)::int AS n FROM items WHERE catalog_id = $1', [tenant.catalogId])).rows[0].n, 1498);
  const jobs = (await sql.query('SELECT count(*)::int AS n, sum(file_size_bytes)::int AS bytes FROM import_jobs WHERE catalog_id = $1', [tenant.catalogId])).rows[0];
  assert.deepEqual(jobs, { n: queued.length, bytes: jsonl(lines).length });

  // The same file again: every line comes back unchanged.
  const again = await catalogImport(tenant.key, [path, '--wait'], { CATALOG_IMPORT_PART_BYTES: '50000' });
  assert.equal(again.stdout.trim().split('\n').at(-1), 'total 1500, succeeded 0, unchanged 1498, failed 2');
});

test('import waits out 429 answers per Retry-After', async () => {
  const tenant = await service.newTenant({ tier: 'free' });
  const path = join(dir, 'small.jsonl');
  writeFileSync(path, jsonl([item('RL-1'), item('RL-2')]));
  // Fill the key's previous minute so that the sliding window (platform rate_limit_hit) refuses
  // the next requests for about 4 s: limit 100, previous-minute count n, t s into this minute.
  let t = (Date.now() / 1000) % 60;
  if (t > 48) {
    await new Promise((r) => setTimeout(r, (61 - t) * 1000));
    t = (Date.now() / 1000) % 60;
  }
  const n = Math.ceil((60 * 99) / (56 - t));
  const windowStart = Math.floor(Date.now() / 60_000) * 60 - 60;
  await sql.query('INSERT INTO rate_limits (subject, window_start, count, prev_count) VALUES ($1, $2, $3, 0)', [`key:${tenant.keyId}`, windowStart, n]);
  const result = await catalogImport(tenant.key, [path, '--wait']);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stderr, /HTTP 429; waiting \d+ s before trying again/);
  assert.equal(result.stdout.trim().split('\n').at(-1), 'total 2, succeeded 2, unchanged 0, failed 0');
});

test('import exits 1 when a job fails and 2 without a key', async () => {
  const tenant = await service.newTenant();
  const path = join(dir, 'array.jsonl');
  writeFileSync(path, `[${JSON.stringify(item('ARR'))}]\n`);
  const failed = await catalogImport(tenant.key, [path, '--wait']);
  assert.equal(failed.code, 1);
  assert.match(failed.stdout, /\tfailed\t.*JSON array/);
  const noKey = await catalogImport(undefined, [path]);
  assert.equal(noKey.code, 2);
  assert.match(noKey.stderr, /CATALOG_API_KEY/);
});
