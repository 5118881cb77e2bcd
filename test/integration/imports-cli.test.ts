// `catalog import`: the CLI's whole import dance against the real service: splitting, waiting, 429s, the errors file.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import * as api from '../../generated/client.ts';
import { freePort } from '../../scripts/free-port.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { item, jsonl, startImportService } from '../helpers/imports.ts';
import type { TestService } from '../helpers/service.ts';
import { cliCommand } from '../helpers/runtime.ts';

const FILE = import.meta.filename;
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'catalog-cli-import-'));
let service: TestService;
let sql: Awaited<ReturnType<typeof sqlClient>>;
// The key's requests per minute in the 429 test, and how long its first request is refused past
// the moment it reached the counter (any positive time works: that request is pinned, not raced).
const LIMIT = 100;

/** A file in the test's folder with these bytes; its path. */
function writeFile(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}
const REFUSED_FOR_S = 3;

async function catalogImport(key: string | undefined, args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(...cliCommand(['import', ...args]), {
      env: { PATH: process.env.PATH, CATALOG_API_URL: service.url, ...(key ? { CATALOG_API_KEY: key } : {}), ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/**
 * A `rate_limits` row (window start, count) that refuses every request of the key counted at a
 * moment from `from` until `until` (Unix seconds), with the moment it admits again (`until`, or
 * a fraction of a second later); undefined when no row can. The sliding window (rate-limit.ts) only sees the row's minute and the next one: when
 * both moments fall where the row can be last minute's, its count slides out at `until`;
 * otherwise it is this minute's, over the limit, and last minute's for the next one.
 */
function refusingRow(from: number, until: number): { windowStart: number; count: number; admitsAt: number } | undefined {
  const minute = Math.floor(from / 60) * 60;
  // The previous minute's count c slides out at t s into this one: c·(60 − t)/60 = LIMIT − 1.
  const row = (windowStart: number, t: number) => {
    const count = Math.ceil((60 * (LIMIT - 1)) / (60 - Math.max(t, 1)));
    return { windowStart, count, admitsAt: windowStart + 60 + 60 - (60 * (LIMIT - 1)) / count };
  };
  if (until - minute < 59) return row(minute - 60, until - minute);
  if (until - minute - 60 < 59) return row(minute, until - minute - 60);
  return undefined;
}

/**
 * Runs `catalog import` with the key's counter row locked by a transaction of the test's own: the
 * CLI's first request (counted by rate-limit.ts's upsert of that row) waits for it, however long
 * the CLI takes to start. That request read the clock between the CLI's start and its statement's
 * start; the row is then set to refuse it until REFUSED_FOR_S after the latter, and unlocked.
 * Answers undefined when the CLI took so long that no row covers both moments (it then ran unrefused).
 */
async function importWithFirstRequestRefused(tenant: { key: string; keyId: string }, path: string) {
  const subject = `key:${tenant.keyId}`;
  await sql.query('INSERT INTO rate_limits (subject, window_start, count, prev_count) VALUES ($1, 0, 0, 0)', [subject]);
  const locker = await sqlClient(service.databaseUrl);
  try {
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM rate_limits WHERE subject = $1 FOR UPDATE', [subject]);
    const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const startedAt = Date.now() / 1000;
    let ended = false;
    const importing = catalogImport(tenant.key, [path, '--wait']).finally(() => { ended = true; });
    let countedBy: number | undefined;
    while (countedBy === undefined) {
      if (ended) assert.fail(`the CLI ended before its first request reached the counter: ${JSON.stringify(await importing)}`);
      countedBy = (await sql.query<{ at: number }>(
        'SELECT extract(epoch FROM query_start)::float8 AS at FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [lockerPid])).rows[0]?.at;
      if (countedBy === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    const row = refusingRow(startedAt, countedBy + REFUSED_FOR_S);
    if (row) await locker.query('UPDATE rate_limits SET window_start = $2, count = $3, prev_count = 0 WHERE subject = $1', [subject, row.windowStart, row.count]);
    await locker.query('COMMIT');
    const result = await importing;
    // The refused request read the clock between the CLI's start and its statement's start.
    return row && { ...result, longestWait: Math.ceil(row.admitsAt - startedAt), shortestWait: Math.floor(row.admitsAt - countedBy) };
  } finally {
    await locker.query('ROLLBACK').catch(() => undefined);
    await locker.end();
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
  // stderr is a pipe here: progress comes as plain lines, the last one with every line and failure counted.
  assert.match(result.stderr, /^importing: 1500\/1500 \d+\/s ETA \S+ 2 failed \(100%\), (completed(_with_errors)?(, )?)+$/m);
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
  const path = join(dir, 'small.jsonl');
  writeFileSync(path, jsonl([item('RL-1'), item('RL-2')]));
  let refused: Awaited<ReturnType<typeof importWithFirstRequestRefused>>;
  while (!refused) {
    const tenant = await service.newTenant({ tier: 'free' });
    await sql.query('UPDATE api_keys SET rate_limit_per_minute = $1 WHERE id = $2', [LIMIT, tenant.keyId]);
    refused = await importWithFirstRequestRefused(tenant, path);
  }
  const { code, stdout, stderr, shortestWait, longestWait } = refused;
  assert.equal(code, 0, stderr);
  assert.match(stderr, /HTTP 429; waiting \d+ s before trying again/);
  // Retry-After honoured: one refusal of the job's creation, whose wait ran to the refusal's end.
  const waits = [...stderr.matchAll(/import: create job: HTTP 429; waiting (\d+) s before trying again/g)].map((m) => Number(m[1]));
  assert.equal(waits.length, 1, stderr);
  assert.ok(waits[0]! >= shortestWait && waits[0]! <= longestWait, `${waits[0]} s not in [${shortestWait}, ${longestWait}]: ${stderr}`);
  assert.equal(stdout.trim().split('\n').at(-1), 'total 2, succeeded 2, unchanged 0, failed 0');
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

test('import with no service at CATALOG_API_URL stops after a few tries, naming the address, the cause and the fix', async () => {
  const port = await freePort();
  const result = await catalogImport('cat_live_0000000000000000000000000000000a', [writeFile('nowhere.jsonl', jsonl([item('N-1')]))], {
    CATALOG_API_URL: `http://127.0.0.1:${port}`,
  });
  assert.equal(result.code, 1);
  assert.match(result.stderr, new RegExp(`no answer from http://127\\.0\\.0\\.1:${port}/api/v1/catalog \\(connection refused\\)`));
  assert.match(result.stderr, /Is the service running there\? Set CATALOG_API_URL/);
  // Three tries (two waits between them), not eight up to a minute apart.
  assert.equal(result.stderr.match(/waiting \d+ s before trying again/g)?.length, 2, result.stderr);
});

test('import behind five unfinished jobs lists them once and says how to cancel one', async () => {
  const tenant = await service.newTenant();
  const opts = clientOptions(service.url, tenant.key);
  const stuck = [];
  for (let i = 0; i < 5; i++) stuck.push(expectData(await api.createImport({ fileSizeBytes: 10 }, {}, opts), 201).jobId);
  const child = spawn(...cliCommand(['import', writeFile('behind.jsonl', jsonl([item('B-1')]))]), {
    env: { PATH: process.env.PATH, CATALOG_API_URL: service.url, CATALOG_API_KEY: tenant.key }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  try {
    await new Promise<void>((done, fail) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('waiting 5 s for one to finish')) done();
      });
      child.once('exit', (code) => fail(new Error(`import exited with ${code}: ${stderr}`)));
    });
  } finally {
    child.kill();
  }
  assert.match(stderr, /already has 5 unfinished import jobs/);
  for (const jobId of stuck) assert.match(stderr, new RegExp(`${jobId}  awaiting_upload  created \\S+, upload window until `));
  assert.match(stderr, new RegExp(`POST ${service.url}/api/v1/catalog/imports/<jobId>/cancel`));
});
