// Imports from an address, against a real local origin: fetched with secret headers, unchanged feeds skipped, redirects, and every way a source fails.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { ImportJob } from '../../generated/client.ts';
import { freePort } from '../../scripts/free-port.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { item, jsonl, startImportService, waitForJob } from '../helpers/imports.ts';
import { startJsonlOrigin } from '../helpers/jsonl-origin.ts';
import type { JsonlOrigin } from '../helpers/jsonl-origin.ts';
import { cliCommand } from '../helpers/runtime.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let origin: JsonlOrigin;
let other: JsonlOrigin;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const opts = (tenant: Tenant) => clientOptions(service.url, tenant.key);

before(async () => {
  // Development: private addresses (the local origin) and http allowed.
  service = await startImportService(FILE, { OUTBOUND_ALLOW_PRIVATE: 'true' });
  sql = await sqlClient(service.databaseUrl);
  origin = await startJsonlOrigin();
  other = await startJsonlOrigin();
});
after(async () => {
  await sql?.end();
  await origin?.close();
  await other?.close();
  await service?.close();
});

/** POST /imports with a source: 202 with the job, queued; then its end. */
async function importFrom(tenant: Tenant, source: api.ImportSource): Promise<ImportJob> {
  const answer = await api.createImport({ source }, {}, opts(tenant));
  assert.equal(answer.status, 202, JSON.stringify(answer.data));
  const queued = (answer.data as { data: ImportJob }).data;
  assert.equal(queued.status, 'queued');
  return waitForJob(opts(tenant), queued.id);
}

test('a feed at an address: fetched with its secret headers, never shown back; unchanged, it completes at once without being read', async () => {
  const tenant = await service.newTenant();
  origin.feed = jsonl([item('S-1'), item('S-2'), '{"broken"']);
  const secret = `Bearer erp-${Date.now()}`;
  const source = { url: `${origin.url}/feed.jsonl?signature=abc123`, headers: { Authorization: secret }, ifChanged: true };
  const first = await importFrom(tenant, source);
  assert.equal(first.status, 'completed_with_errors');
  assert.deepEqual(first.counts, { total: 3, processed: 3, succeeded: 2, failed: 1, unchanged: 0 });
  assert.equal(first.fileSizeBytes, origin.feed.length);
  assert.deepEqual({ ...first.source, etag: typeof first.source?.etag },
    { url: `${origin.url}/feed.jsonl`, ifChanged: true, unchanged: false, etag: 'string', lastModified: null });
  const got = origin.requests.filter((r) => r.method === 'GET' && r.path === '/feed.jsonl');
  assert.equal(got.at(-1)?.headers.authorization, secret);
  // Never shown back, and not kept once fetched.
  const shown = JSON.stringify([expectData(await api.getImport(first.id, opts(tenant)), 200), expectData(await api.listImports({}, opts(tenant)), 200)]);
  assert.ok(!shown.includes(secret) && !shown.includes('abc123'), shown);
  assert.equal((await sql.query('SELECT source_headers_sealed FROM import_jobs WHERE id = $1', [first.id])).rows[0].source_headers_sealed, null);
  expectData(await api.getItem('erp', 'S-2', opts(tenant)), 200);

  const requestsBefore = origin.requests.length;
  const again = await importFrom(tenant, source);
  assert.equal(again.status, 'completed');
  assert.equal(again.source?.unchanged, true);
  assert.deepEqual(again.counts, { total: 0, processed: 0, succeeded: 0, failed: 0, unchanged: 0 });
  const asked = origin.requests.slice(requestsBefore);
  assert.deepEqual(asked.map((r) => [r.method, r.headers['if-none-match']]), [['GET', first.source!.etag]], 'one request, answered 304');

  origin.feed = jsonl([item('S-1'), item('S-2', { price: 99 }), item('S-3')]);
  const changed = await importFrom(tenant, source);
  assert.equal(changed.status, 'completed');
  assert.equal(changed.source?.unchanged, false);
  assert.deepEqual(changed.counts, { total: 3, processed: 3, succeeded: 2, failed: 0, unchanged: 1 });
});

test('redirects are followed; the caller\'s headers go only to the address\'s own origin', async () => {
  const tenant = await service.newTenant();
  origin.feed = jsonl([item('R-1')]);
  other.feed = jsonl([item('R-2')]);
  const same = await importFrom(tenant, { url: `${origin.url}/redirect`, headers: { authorization: 'Bearer same' } });
  assert.equal(same.status, 'completed');
  assert.equal(origin.requests.filter((r) => r.path === '/feed.jsonl').at(-1)?.headers.authorization, 'Bearer same');
  origin.elsewhere = `${other.url}/feed.jsonl`;
  const elsewhere = await importFrom(tenant, { url: `${origin.url}/elsewhere`, headers: { authorization: 'Bearer not-for-them' } });
  assert.equal(elsewhere.status, 'completed');
  expectData(await api.getItem('erp', 'R-2', opts(tenant)), 200);
  assert.equal(other.requests.filter((r) => r.path === '/feed.jsonl').at(-1)?.headers.authorization, undefined);
});

test('a source that cannot be imported fails its job with a reason naming what went wrong', async () => {
  const tenant = await service.newTenant();
  origin.feed = jsonl([item('F-1')]);
  const closed = await freePort();
  const cases: Array<[string, RegExp]> = [
    [`${origin.url}/missing.jsonl`, /^the source answered HTTP 404$/],
    [`${origin.url}/page.html`, /^the source answered Content-Type text\/html, not JSONL$/],
    [`${origin.url}/huge.jsonl`, /^the source is over 100 MB$/],
    [`${origin.url}/endless.jsonl`, /^the source is over 100 MB$/],
    [`${origin.url}/cut.jsonl`, /^the source sent 23 of the 1000 bytes it announced$/],
    [`${origin.url}/changing.jsonl`, /^the source changed while it was read; import it again$/],
    [`http://127.0.0.1:${closed}/feed.jsonl`, new RegExp(`^the source 127\\.0\\.0\\.1:${closed} is unreachable: connection refused$`)],
  ];
  // The docs quote each reason with its numbers and host as N, M and <host>: the words a user searches their logs for.
  const docs = (await readFile(new URL('../../docs/imports.md', import.meta.url), 'utf8')).replace(/\s+/g, ' ');
  for (const [url, reason] of cases) {
    const job = await importFrom(tenant, { url });
    assert.equal(job.status, 'failed', url);
    assert.match(job.failureReason ?? '', reason, url);
    const quoted = job.failureReason!.replace(/sent \d+ of the \d+/, 'sent N of the M').replace(/127\.0\.0\.1:\d+/, '<host>');
    assert.ok(docs.includes(`\`${quoted}\``), `docs/imports.md quotes "${quoted}"`);
  }
  for (const body of [{ fileSizeBytes: 10, source: { url: `${origin.url}/feed.jsonl` } }, {}]) {
    const refused = expectStatus(await api.createImport(body, {}, opts(tenant)), 400);
    assert.equal(refused.error.details?.[0]?.path, 'fileSizeBytes');
  }
  for (const [url, message] of [['ftp://127.0.0.1/x.jsonl', /http\(s\)/], ['http://user:pw@127.0.0.1/x.jsonl', /credentials/]] as const) {
    const refused = expectStatus(await api.createImport({ source: { url } }, {}, opts(tenant)), 400);
    assert.equal(refused.error.details?.[0]?.path, 'source.url');
    assert.match(refused.error.details?.[0]?.message ?? '', message);
  }
  const own = expectStatus(await api.createImport({ source: { url: `${origin.url}/feed.jsonl`, headers: { Host: 'x' } } }, {}, opts(tenant)), 400);
  assert.equal(own.error.details?.[0]?.path, 'source.headers.Host');
});

test('catalog import --from URL --header … --if-changed: the service fetches the feed; unchanged, the command says so', async () => {
  const tenant = await service.newTenant();
  origin.feed = jsonl([item('C-1'), item('C-2')]);
  const dir = mkdtempSync(join(tmpdir(), 'catalog-source-cli-'));
  const run = async (args: string[]) => promisify(execFile)(...cliCommand(['import', ...args]), {
    env: { PATH: process.env.PATH, CATALOG_API_URL: service.url, CATALOG_API_KEY: tenant.key },
  });
  const args = ['--from', `${origin.url}/feed.jsonl`, '--header', 'Authorization: Bearer cli-secret', '--if-changed'];
  const first = await run([...args, '--results', join(dir, 'results.jsonl')]);
  assert.match(first.stdout, new RegExp(`^\\S+\\tqueued\\tfrom ${origin.url}/feed\\.jsonl$`, 'm'));
  assert.equal(first.stdout.trim().split('\n').at(-1), 'total 2, succeeded 2, unchanged 0, failed 0');
  assert.deepEqual(readFileSync(join(dir, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l).status), ['created', 'created']);
  assert.equal(origin.requests.filter((r) => r.method === 'GET').at(-1)?.headers.authorization, 'Bearer cli-secret');
  const second = await run([...args, '--wait']);
  assert.match(second.stdout, /\tcompleted\ttotal 0\tsucceeded 0\tunchanged 0\tfailed 0\tthe source is unchanged since the last import from it: not read$/m);
});
