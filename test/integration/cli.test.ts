// The operator's command line: catalogs and keys, with the outputs DESIGN §5 fixes.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { checkedFetch } from '../helpers/contract-check.ts';
import { sqlClient } from '../helpers/database.ts';
import { startTestService, testEnv } from '../helpers/service.ts';
import type { TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const run = promisify(execFile);
let service: TestService;

async function catalog(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['cli/main.ts', ...args], {
      env: testEnv(FILE, service.databaseUrl) as NodeJS.ProcessEnv,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';

before(async () => {
  service = await startTestService(FILE);
});
after(async () => {
  await service?.close();
});

test('catalogs create prints the catalog id on its last line', async () => {
  const result = await catalog('catalogs', 'create', '--name', 'Acme Store', '--owner-email', 'ops@acme.example');
  assert.equal(result.code, 0, result.stderr);
  const id = lastLine(result.stdout);
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  const sql = await sqlClient(service.databaseUrl);
  try {
    const { rows } = await sql.query('select name, owner_email from catalogs where id = $1', [id]);
    assert.deepEqual(rows, [{ name: 'Acme Store', owner_email: 'ops@acme.example' }]);
  } finally {
    await sql.end();
  }
  const again = await catalog('catalogs', 'create', '--name', 'Acme Store', '--owner-email', 'ops@acme.example');
  assert.equal(again.code, 1);
  assert.match(again.stderr, /already exists/);
});

test('keys create prints the key alone on its last line; only its hash is stored; it works at once', async () => {
  await catalog('catalogs', 'create', '--name', 'Keys Shop', '--owner-email', 'ops@keys.example');
  const result = await catalog('keys', 'create', '--catalog', 'Keys Shop', '--scopes', 'catalog:read,catalog:write', '--tier', 'pro');
  assert.equal(result.code, 0, result.stderr);
  const key = lastLine(result.stdout);
  assert.match(key, /^cat_live_[0-9A-Za-z]{32}$/);
  const sql = await sqlClient(service.databaseUrl);
  try {
    const { rows } = await sql.query('select key_hash, key_prefix, scopes, tier from api_keys where key_prefix = $1', [key.slice(0, 13)]);
    assert.equal(rows.length, 1);
    assert.notEqual(rows[0].key_hash, key);
    assert.equal(rows[0].key_hash.length, 64);
    assert.deepEqual(rows[0].scopes, ['catalog:read', 'catalog:write']);
    assert.equal(rows[0].tier, 'pro');
  } finally {
    await sql.end();
  }
  const { response } = await checkedFetch(`${service.url}/api/v1/catalog/items`, { headers: { authorization: `Bearer ${key}` } });
  assert.notEqual(response.status, 401);
  assert.equal(response.headers.get('x-ratelimit-limit'), '1000');
});

test('keys list shows ids and prefixes, never keys; keys revoke takes effect on the next request', async () => {
  await catalog('catalogs', 'create', '--name', 'Revoke Shop', '--owner-email', 'ops@revoke.example');
  const created = await catalog('keys', 'create', '--catalog', 'Revoke Shop', '--scopes', 'catalog:read', '--tier', 'free');
  const key = lastLine(created.stdout);
  const listed = await catalog('keys', 'list', '--catalog', 'Revoke Shop');
  assert.equal(listed.code, 0, listed.stderr);
  assert.ok(!listed.stdout.includes(key), 'the key itself is never listed');
  const row = listed.stdout.trim().split('\n')[1]!.split('\t');
  assert.equal(row[1], `${key.slice(0, 13)}…`);
  assert.equal(row[5], '-');

  const revoked = await catalog('keys', 'revoke', row[0]!);
  assert.equal(revoked.code, 0, revoked.stderr);
  const { response, body } = await checkedFetch(`${service.url}/api/v1/catalog/items`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(response.status, 401);
  assert.equal(body.error.code, 'unauthorized');
  const relisted = await catalog('keys', 'list', '--catalog', 'Revoke Shop');
  assert.notEqual(relisted.stdout.trim().split('\n')[1]!.split('\t')[5], '-');
});

test('keys create --rate-limit sets a key\'s own requests per minute in place of its tier\'s', async () => {
  await catalog('catalogs', 'create', '--name', 'Limit Shop', '--owner-email', 'ops@limit.example');
  const created = await catalog('keys', 'create', '--catalog', 'Limit Shop', '--scopes', 'catalog:read', '--tier', 'free', '--rate-limit', '3');
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /3 requests\/minute/);
  const key = lastLine(created.stdout);
  const statuses: number[] = [];
  for (let i = 0; i < 4; i += 1) {
    const { response } = await checkedFetch(`${service.url}/api/v1/catalog/items`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(response.headers.get('x-ratelimit-limit'), '3');
    statuses.push(response.status);
  }
  assert.deepEqual(statuses, [200, 200, 200, 429]);
  const refused = await catalog('keys', 'create', '--catalog', 'Limit Shop', '--scopes', 'catalog:read', '--rate-limit', 'lots');
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /rate-limit/);
});

test('bad invocations explain themselves and exit non-zero', async () => {
  const unknownScope = await catalog('keys', 'create', '--catalog', 'Keys Shop', '--scopes', 'catalog:everything', '--tier', 'free');
  assert.equal(unknownScope.code, 1);
  assert.match(unknownScope.stderr, /unknown scope catalog:everything/);
  const badTier = await catalog('keys', 'create', '--catalog', 'Keys Shop', '--scopes', 'catalog:read', '--tier', 'gold');
  assert.equal(badTier.code, 1);
  assert.match(badTier.stderr, /tier/);
  const noCatalog = await catalog('keys', 'create', '--catalog', 'No Such Shop', '--scopes', 'catalog:read');
  assert.equal(noCatalog.code, 1);
  assert.match(noCatalog.stderr, /not found/);
  const missingFlag = await catalog('catalogs', 'create', '--name', 'X');
  assert.equal(missingFlag.code, 2);
  assert.match(missingFlag.stderr, /--owner-email is required/);
  const unknown = await catalog('frobnicate');
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /Usage: catalog/);
});
