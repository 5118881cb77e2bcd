// Console access and the keys API through HTTP: single-use links, sessions that are expiring keys, their revocation, and keys never minted beyond their maker.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import * as client from '../../generated/client.ts';
import type { CatalogScope, ConsoleSession } from '../../generated/client.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let operator: Tenant;
let alice: Tenant;
let bob: Tenant;

before(async () => {
  service = await startTestService(FILE);
  // The operator's key lives in a catalog of its own; `admin` reaches every catalog's links.
  operator = await service.newTenant({ scopes: ['admin'] });
  alice = await service.newTenant({ scopes: ['catalog:read', 'catalog:write', 'webhooks:manage', 'keys:manage'] });
  bob = await service.newTenant();
});

after(async () => {
  await service?.close();
});

const as = (key?: string) => clientOptions(service.url, key);

async function sql(statement: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  const connection = await sqlClient(service.databaseUrl);
  try {
    return (await connection.query(statement, params)).rows;
  } finally {
    await connection.end();
  }
}

/** The token a link carries in its URL's fragment. */
function tokenOf(url: string): string {
  const parsed = new URL(url);
  return new URLSearchParams(parsed.hash.slice(1)).get('link')!;
}

async function mint(tenant: Tenant, scopes: CatalogScope[], extra: Partial<client.CreateConsoleLinkRequest> = {}) {
  return expectData(await client.createConsoleLink({ catalog: tenant.catalogId, scopes, ...extra }, as(operator.key)), 201);
}

async function session(tenant: Tenant, scopes: CatalogScope[]): Promise<ConsoleSession> {
  const link = await mint(tenant, scopes);
  return expectData(await client.redeemConsoleLink({ link: tokenOf(link.url) }, as()), 201);
}

function refusalOf(answer: Awaited<ReturnType<typeof client.redeemConsoleLink>>) {
  const body = expectStatus(answer, 401);
  return { reason: body.error.details?.[0], message: body.error.message };
}

describe('console links', () => {
  test('a link carries its token in the fragment only, stores its hash, and redeems once; a second redeem is "used"', async () => {
    const link = await mint(alice, ['catalog:read'], { label: 'support ticket 4711' });
    const url = new URL(link.url);
    assert.equal(`${url.origin}${url.pathname}`, `${service.config.publicBaseUrl}/console/`);
    assert.equal(url.search, '', 'nothing in the query, which servers and proxies log');
    const token = tokenOf(link.url);
    assert.match(token, /^cl_[0-9A-Za-z]{32}$/);
    assert.deepEqual([link.catalogName.startsWith('tenant-'), link.scopes, link.label, link.sessionMinutes], [true, ['catalog:read'], 'support ticket 4711', 480]);
    const redeemIn = Date.parse(link.redeemBy) - Date.parse(link.createdAt);
    assert.ok(Math.abs(redeemIn - 15 * 60_000) < 1000, `redeemable for 15 minutes by default (${redeemIn} ms)`);
    const stored = await sql('SELECT token_hash FROM console_links WHERE id = $1', [link.id]);
    assert.deepEqual(stored, [{ token_hash: createHash('sha256').update(token).digest('hex') }]);

    const opened = expectData(await client.redeemConsoleLink({ link: token }, as()), 201);
    assert.match(opened.token, /^cat_live_[0-9A-Za-z]{32}$/);
    assert.deepEqual([opened.id, opened.catalogId, opened.scopes], [link.id, alice.catalogId, ['catalog:read']]);
    const lasts = Date.parse(opened.expiresAt) - Date.now();
    assert.ok(lasts > 479 * 60_000 && lasts <= 480 * 60_000, `the session lasts sessionMinutes (${lasts} ms)`);

    const again = refusalOf(await client.redeemConsoleLink({ link: token }, as()));
    assert.deepEqual(again.reason, { path: 'link', message: 'used' });
    assert.match(again.message, /already used/);
    const unknown = refusalOf(await client.redeemConsoleLink({ link: 'cl_notalinkthisserviceissued000000' }, as()));
    assert.deepEqual(unknown.reason, { path: 'link', message: 'unknown' });
  });

  test('a link past its redeemBy is "expired", a revoked one "revoked"', async () => {
    const late = await mint(alice, ['catalog:read'], { redeemWithinMinutes: 1 });
    await sql(`UPDATE console_links SET redeem_by = now() - interval '1 second' WHERE id = $1`, [late.id]);
    const expired = refusalOf(await client.redeemConsoleLink({ link: tokenOf(late.url) }, as()));
    assert.deepEqual(expired.reason, { path: 'link', message: 'expired' });
    assert.match(expired.message, /expired/);

    const withdrawn = await mint(alice, ['catalog:read']);
    expectData(await client.revokeConsoleSession(withdrawn.id, as(operator.key)), 200);
    const revoked = refusalOf(await client.redeemConsoleLink({ link: tokenOf(withdrawn.url) }, as()));
    assert.deepEqual(revoked.reason, { path: 'link', message: 'revoked' });
  });

  test('only an admin key mints, for a catalog that exists, with catalog scopes only', async () => {
    assert.equal((await client.createConsoleLink({ catalog: alice.catalogId, scopes: ['catalog:read'] }, as(alice.key))).status, 403);
    assert.equal((await client.createConsoleLink({ catalog: 'No Such Catalog', scopes: ['catalog:read'] }, as(operator.key))).status, 404);
    const admin = await client.createConsoleLink({ catalog: alice.catalogId, scopes: ['admin' as CatalogScope] }, as(operator.key));
    assert.equal(admin.status, 400);
    const byName = await mint(alice, ['catalog:read']);
    const named = expectData(await client.createConsoleLink({ catalog: byName.catalogName, scopes: ['catalog:read'] }, as(operator.key)), 201);
    assert.equal(named.catalogId, alice.catalogId);
  });
});

describe('console sessions', () => {
  test('a session reads and writes its own catalog only: another catalog\'s item and webhook are 404s', async () => {
    expectData(await client.upsertItem({ externalSystem: 'erp', externalId: 'BOB-1', name: 'Bob only' }, as(bob.key)), 201);
    const hook = expectData(await client.createWebhook({ url: 'https://hooks.example.invalid/bob', events: ['*'] }, {}, as(bob.key)), 201);
    const own = await session(alice, ['catalog:read', 'catalog:write', 'webhooks:manage']);
    expectData(await client.upsertItem({ externalSystem: 'erp', externalId: 'ALICE-1', name: 'Alice only' }, as(own.token)), 201);
    assert.equal((await client.getItem('erp', 'BOB-1', as(own.token))).status, 404);
    assert.equal((await client.getWebhook(hook.id, as(own.token))).status, 404);
    const listed = expectData(await client.listItems({}, as(own.token)), 200);
    assert.deepEqual(listed.items.map((item) => item.externalId), ['ALICE-1']);
  });

  test('a read-only session lists but cannot write (403)', async () => {
    const reader = await session(alice, ['catalog:read']);
    expectData(await client.listItems({}, as(reader.token)), 200);
    const write = await client.upsertItem({ externalSystem: 'erp', externalId: 'NOPE', name: 'Refused' }, as(reader.token));
    assert.equal(write.status, 403);
  });

  test('a session past its expiresAt, revoked by the operator, or ended by its user is a 401', async () => {
    const lapsed = await session(alice, ['catalog:read']);
    await sql(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [lapsed.id]);
    assert.equal((await client.listItems({}, as(lapsed.token))).status, 401);

    const revoked = await session(alice, ['catalog:read']);
    expectData(await client.listItems({}, as(revoked.token)), 200);
    const record = expectData(await client.revokeConsoleSession(revoked.id, as(operator.key)), 200);
    assert.equal(record.state, 'revoked');
    assert.equal((await client.listItems({}, as(revoked.token))).status, 401);

    const signedOut = await session(alice, ['catalog:read']);
    const ended = expectData(await client.endConsoleSession(as(signedOut.token)), 200);
    assert.deepEqual([ended.id, ended.state], [signedOut.id, 'revoked']);
    assert.equal((await client.getAccess(as(signedOut.token))).status, 401);
    assert.equal((await client.endConsoleSession(as(alice.key))).status, 403, 'a key is not a session');
    assert.equal((await client.revokeConsoleSession('0192f720-1a2b-7c3d-8e4f-5a6b7c8d9e0f', as(operator.key))).status, 404);
  });

  test('the operator lists links with their states, of one catalog or all', async () => {
    const catalog = await service.newTenant({ scopes: ['catalog:read'] });
    const pending = await mint(catalog, ['catalog:read']);
    const late = await mint(catalog, ['catalog:read']);
    await sql(`UPDATE console_links SET redeem_by = now() - interval '1 second' WHERE id = $1`, [late.id]);
    const active = await session(catalog, ['catalog:read']);
    const revoked = await session(catalog, ['catalog:read']);
    expectData(await client.revokeConsoleSession(revoked.id, as(operator.key)), 200);
    const over = await session(catalog, ['catalog:read']);
    await sql(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [over.id]);

    const first = expectData(await client.listConsoleSessions({ catalog: catalog.catalogId, limit: 3 }, as(operator.key)), 200);
    assert.ok(first.nextCursor);
    const rest = expectData(await client.listConsoleSessions({ catalog: catalog.catalogId, cursor: first.nextCursor }, as(operator.key)), 200);
    const states = new Map([...first.sessions, ...rest.sessions].map((s) => [s.id, s]));
    assert.deepEqual([pending.id, late.id, active.id, revoked.id, over.id].map((id) => states.get(id)?.state), ['pending', 'expired', 'active', 'revoked', 'expired']);
    assert.deepEqual([...states.keys()], [over.id, revoked.id, active.id, late.id, pending.id], 'newest first');
    assert.equal(states.get(pending.id)!.redeemedAt, null);
    assert.ok(states.get(active.id)!.redeemedAt && states.get(active.id)!.expiresAt);
    const all = expectData(await client.listConsoleSessions({ limit: 200 }, as(operator.key)), 200);
    assert.ok(all.sessions.some((s) => s.catalogId === alice.catalogId) && all.sessions.some((s) => s.catalogId === catalog.catalogId));
    assert.equal((await client.listConsoleSessions({ catalog: 'No Such Catalog' }, as(operator.key))).status, 404);
    assert.equal((await client.listConsoleSessions({}, as(alice.key))).status, 403);
  });
});

describe('access and keys', () => {
  test('GET /access describes a key and a session, whatever their scopes', async () => {
    const key = expectData(await client.getAccess(as(alice.key)), 200);
    assert.deepEqual([key.keyId, key.catalogId, key.kind, key.expiresAt], [alice.keyId, alice.catalogId, 'key', null]);
    const reader = await session(alice, ['catalog:read']);
    const own = expectData(await client.getAccess(as(reader.token)), 200);
    assert.deepEqual([own.keyId, own.kind, own.scopes, own.expiresAt], [reader.id, 'console', ['catalog:read'], reader.expiresAt]);
    const scopeless = await service.newTenant({ scopes: ['stock:write'] });
    assert.equal(expectData(await client.getAccess(as(scopeless.key)), 200).catalogId, scopeless.catalogId);
    assert.equal((await client.getAccess(as())).status, 401);
  });

  test('a key issues keys within its own scopes only, never admin; the list shows no secret; a revoked key is a 401', async () => {
    const made = expectData(await client.createKey({ scopes: ['catalog:read'], label: 'storefront' }, as(alice.key)), 201);
    assert.match(made.key, /^cat_live_[0-9A-Za-z]{32}$/);
    assert.deepEqual([made.prefix, made.scopes, made.label, made.tier, made.revokedAt], [made.key.slice(0, 13), ['catalog:read'], 'storefront', 'enterprise', null]);
    expectData(await client.listItems({}, as(made.key)), 200);

    const beyond = await client.createKey({ scopes: ['catalog:read', 'stock:write'] }, as(alice.key));
    assert.equal(beyond.status, 403);
    assert.match(expectStatus(beyond, 403).error.message, /stock:write/);
    const admin = await client.createKey({ scopes: ['admin'] }, as(alice.key));
    assert.equal(admin.status, 403);
    assert.match(expectStatus(admin, 403).error.message, /admin/);
    const past = await client.createKey({ scopes: ['catalog:read'], expiresAt: '2020-01-01T00:00:00Z' }, as(alice.key));
    assert.equal(past.status, 400);
    assert.equal((await client.createKey({ scopes: ['catalog:read'] }, as(made.key))).status, 403, 'keys:manage is needed');

    const listed = expectData(await client.listKeys({}, as(alice.key)), 200);
    assert.ok(listed.keys.some((k) => k.id === made.id));
    assert.ok(listed.keys.every((k) => !('key' in k) && !('keyHash' in k)));
    assert.ok(!JSON.stringify(listed).includes(made.key.slice(13)), 'never the key');
    const sessions = await sql(`SELECT id FROM api_keys WHERE catalog_id = $1 AND kind = 'console'`, [alice.catalogId]);
    assert.ok(sessions.length > 0 && sessions.every((s) => !listed.keys.some((k) => k.id === s.id)), 'console sessions are not keys');

    assert.equal((await client.revokeKey(made.id, as(bob.key))).status, 404, 'another catalog\'s key');
    const revoked = expectData(await client.revokeKey(made.id, as(alice.key)), 200);
    assert.ok(revoked.revokedAt);
    assert.equal((await client.listItems({}, as(made.key))).status, 401);
  });

  test('a session with keys:manage issues keys that outlive it; a key may revoke itself', async () => {
    const manager = await session(alice, ['catalog:read', 'keys:manage']);
    const made = expectData(await client.createKey({ scopes: ['catalog:read'] }, as(manager.token)), 201);
    assert.deepEqual([made.tier, made.expiresAt], ['pro', null]);
    assert.equal((await client.createKey({ scopes: ['catalog:write'] }, as(manager.token))).status, 403);
    assert.equal((await client.revokeKey(manager.id, as(alice.key))).status, 404, 'a session is revoked as a session, not as a key');
    const self = expectData(await client.createKey({ scopes: ['catalog:read', 'keys:manage'] }, as(alice.key)), 201);
    expectData(await client.revokeKey(self.id, as(self.key)), 200);
    assert.equal((await client.getAccess(as(self.key))).status, 401);
  });
});
