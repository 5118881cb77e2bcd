// Keys with limits through HTTP: an expiry the refusal names, lastUsedAt kept once a minute, address ranges behind and without a trusted proxy.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as client from '../../generated/client.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
// The same database behind one trusted proxy: the last X-Forwarded-For entry is the client.
let proxied: TestService;
let alice: Tenant;
let bob: Tenant;

before(async () => {
  service = await startTestService(FILE);
  proxied = await startTestService(FILE, { DATABASE_URL: service.databaseUrl, TRUST_PROXY_HOPS: '1' });
  alice = await service.newTenant({ scopes: ['catalog:read', 'keys:manage'] });
  bob = await service.newTenant({ scopes: ['catalog:read', 'keys:manage'] });
});

after(async () => {
  await proxied?.close();
  await service?.close();
});

const as = (key: string, headers: Record<string, string> = {}, url = service.url) => clientOptions(url, key, headers);

async function sql(statement: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  const connection = await sqlClient(service.databaseUrl);
  try {
    return (await connection.query(statement, params)).rows;
  } finally {
    await connection.end();
  }
}

const issue = async (request: Omit<client.CreateApiKeyRequest, 'scopes'> = {}) =>
  expectData(await client.createKey({ scopes: ['catalog:read'], ...request }, as(alice.key)), 201);

test('an expired key is refused with 401 naming the instant it expired', async () => {
  const made = await issue({ expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
  assert.equal((await client.getAccess(as(made.key))).status, 200);
  const expiredAt = new Date(Date.now() - 3_600_000).toISOString();
  await sql('UPDATE api_keys SET expires_at = $1 WHERE id = $2', [expiredAt, made.id]);
  const refused = expectStatus(await client.getAccess(as(made.key)), 401);
  assert.equal(refused.error.message, `This API key expired at ${expiredAt}; ask for a new one.`);
  // A revoked key says no more than that it is not valid, expired or not.
  await client.revokeKey(made.id, as(alice.key));
  assert.match(expectStatus(await client.getAccess(as(made.key)), 401).error.message, /invalid, expired or has been revoked/);
});

test('a key fenced to address ranges is refused (403) from any other address and admitted from its own', async () => {
  const elsewhere = await issue({ allowedCidrs: ['10.0.0.0/8'] });
  assert.deepEqual(elsewhere.allowedCidrs, ['10.0.0.0/8']);
  const refused = expectStatus(await client.getAccess(as(elsewhere.key)), 403);
  assert.deepEqual([refused.error.code, refused.error.message], ['forbidden', 'This API key may not be used from 127.0.0.1.']);
  const here = await issue({ allowedCidrs: ['2001:db8::/32', '127.0.0.1/32'] });
  assert.equal(expectData(await client.getAccess(as(here.key)), 200).keyId, here.id);
});

test('X-Forwarded-For decides the address only where TRUST_PROXY_HOPS trusts a proxy', async () => {
  const made = await issue({ allowedCidrs: ['203.0.113.0/24'] });
  const through = (forwarded: string, url: string) => client.getAccess(as(made.key, { 'x-forwarded-for': forwarded }, url));
  assert.equal((await through('198.51.100.7, 203.0.113.9', proxied.url)).status, 200, 'the proxy\'s entry is the last one');
  const spoofed = expectStatus(await through('203.0.113.9, 198.51.100.7', proxied.url), 403);
  assert.equal(spoofed.error.message, 'This API key may not be used from 198.51.100.7.', 'entries left of the proxy\'s are the client\'s to invent');
  const ignored = expectStatus(await through('203.0.113.9', service.url), 403);
  assert.equal(ignored.error.message, 'This API key may not be used from 127.0.0.1.');

  // Requests without a key count against the same address.
  await client.getOpenApi({ headers: { 'x-forwarded-for': '192.0.2.44' }, baseUrl: `${proxied.url}/api/v1/catalog` });
  await client.getOpenApi({ headers: { 'x-forwarded-for': '192.0.2.45' }, baseUrl: `${service.url}/api/v1/catalog` });
  const subjects = (await sql(`SELECT subject FROM rate_limits WHERE subject IN ('ip:192.0.2.44', 'ip:192.0.2.45')`)).map((r) => r.subject);
  assert.deepEqual(subjects, ['ip:192.0.2.44']);
});

test('lastUsedAt is set by the first request and rewritten at most once a minute', async () => {
  const made = await issue();
  assert.equal(made.lastUsedAt, null);
  const lastUsed = async () => (await sql('SELECT last_used_at FROM api_keys WHERE id = $1', [made.id]))[0]!.last_used_at as Date | null;
  await client.getAccess(as(made.key));
  const first = await lastUsed();
  assert.ok(first && Math.abs(first.getTime() - Date.now()) < 10_000, String(first));
  await client.getAccess(as(made.key));
  assert.deepEqual(await lastUsed(), first, 'not rewritten within the minute');

  await sql(`UPDATE api_keys SET last_used_at = last_used_at - interval '1 hour' WHERE id = $1`, [made.id]);
  await client.getAccess(as(made.key));
  const again = await lastUsed();
  assert.ok(again && again.getTime() >= first.getTime(), `${String(again)} after ${first.toISOString()}`);
  const listed = expectData(await client.listKeys({ limit: 100 }, as(alice.key)), 200).keys.find((key) => key.id === made.id);
  assert.equal(listed?.lastUsedAt, again.toISOString());
});

test('updateKey sets and clears address ranges and expiry; bad ranges and past instants are 400s, another catalog\'s key a 404', async () => {
  const made = await issue();
  const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
  const set = expectData(await client.updateKey(made.id, { allowedCidrs: ['10.0.0.0/8', '::1'], expiresAt }, as(alice.key)), 200);
  assert.deepEqual([set.allowedCidrs, set.expiresAt], [['10.0.0.0/8', '::1/128'], expiresAt]);
  assert.equal((await client.getAccess(as(made.key))).status, 403);

  const cleared = expectData(await client.updateKey(made.id, { allowedCidrs: null }, as(alice.key)), 200);
  assert.deepEqual([cleared.allowedCidrs, cleared.expiresAt], [null, expiresAt], 'a field left out stays');
  assert.equal((await client.getAccess(as(made.key))).status, 200);
  const forever = expectData(await client.updateKey(made.id, { expiresAt: null }, as(alice.key)), 200);
  assert.equal(forever.expiresAt, null);

  const bad = expectStatus(await client.updateKey(made.id, { allowedCidrs: ['10.0.0.0/8', '10.1.0.0/8', 'nowhere'] }, as(alice.key)), 400);
  assert.deepEqual(bad.error.details?.map((d) => d.path), ['allowedCidrs.1', 'allowedCidrs.2']);
  const badAtCreate = expectStatus(await client.createKey({ scopes: ['catalog:read'], allowedCidrs: ['300.1.2.3/8'] }, as(alice.key)), 400);
  assert.deepEqual(badAtCreate.error.details?.map((d) => d.path), ['allowedCidrs.0']);
  const past = expectStatus(await client.updateKey(made.id, { expiresAt: '2020-01-01T00:00:00Z' }, as(alice.key)), 400);
  assert.deepEqual(past.error.details?.map((d) => d.path), ['expiresAt']);

  expectStatus(await client.updateKey(bob.keyId, { allowedCidrs: null }, as(alice.key)), 404);
  expectStatus(await client.updateKey(made.id, { allowedCidrs: null }, as(made.key)), 403);
});
