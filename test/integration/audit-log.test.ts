// The audit log through HTTP and the CLI: one entry per administrative action with its actor, request and address, none for a failure or a no-op, reads, no secrets, and the purge.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import * as client from '../../generated/client.ts';
import type { AuditEntry, CatalogScope } from '../../generated/client.ts';
import { domainEvent, eventRow } from '../../domain/events/outbox.ts';
import { newId } from '../../platform/ids.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { item, jsonl, runImport, startImportService } from '../helpers/imports.ts';
import { cliCommand } from '../helpers/runtime.ts';
import { startTestService, testEnv } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
const run = promisify(execFile);
const RUN = `${process.pid}-${Date.now()}`;
// Spelled out rather than taken from the helpers' ALL_SCOPES, whose content is not this file's to decide.
const CATALOG_SCOPES = ['catalog:read', 'catalog:write', 'bulk_import:manage', 'webhooks:manage', 'stock:write', 'keys:manage'];
// The tenants' keys read their own log.
const AUDITOR = [...CATALOG_SCOPES, 'audit:read'];

let service: TestService;
// The same database behind one trusted proxy: the last X-Forwarded-For entry is the client.
let proxied: TestService;
let receiver: Receiver;
let operator: Tenant;
let sql: Awaited<ReturnType<typeof sqlClient>>;

/** Every secret the test was shown (keys, webhook secrets, link and session tokens): none may reach the audit log. */
const secrets: string[] = [];
/** Every body the audit log was read as (API answers, CLI output). */
const readings: string[] = [];

before(async () => {
  receiver = await startReceiver();
  // A local receiver; deliveries retried at once and a webhook disabled at its first exhausted delivery, so the service's own entry comes quickly.
  service = await startImportService(FILE, {
    WEBHOOK_ALLOW_HTTP: 'true',
    OUTBOUND_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_DELAYS_MS: '0,10,10,10,10,10,10,10',
    WEBHOOK_DISABLE_AFTER: '1',
  });
  proxied = await startTestService(FILE, { DATABASE_URL: service.databaseUrl, ROLE: 'api', TRUST_PROXY_HOPS: '1' });
  sql = await sqlClient(service.databaseUrl);
  operator = await tenant(['admin']);
});

after(async () => {
  await sql?.end();
  await proxied?.close();
  await service?.close();
  await receiver?.close();
});

const as = (key?: string, headers: Record<string, string> = {}, url = service.url) => clientOptions(url, key, headers);

async function tenant(scopes: string[] = AUDITOR): Promise<Tenant> {
  const made = await service.newTenant({ scopes });
  secrets.push(made.key);
  return made;
}

/** The actor a key's request is recorded as. */
const keyActor = (keyId: string, key: string, label: string | null = null) => ({ kind: 'key', keyId, keyPrefix: key.slice(0, 13), label, operator: null });

const requestIdOf = (answer: { headers: Headers }) => {
  const id = answer.headers.get('x-request-id');
  assert.ok(id, 'the answer carries X-Request-Id');
  return id;
};

/** One page of the log as the tenant's key reads it; every answer body is kept for the secrets check. */
async function page(reader: Tenant, query: Parameters<typeof client.listAuditLog>[0] = {}) {
  const answer = await client.listAuditLog(query, as(reader.key));
  readings.push(JSON.stringify(answer.data));
  return expectData(answer, 200);
}

/** The whole log (or what `query` selects), newest first. */
async function entriesOf(reader: Tenant, query: Parameters<typeof client.listAuditLog>[0] = {}): Promise<AuditEntry[]> {
  const entries: AuditEntry[] = [];
  let cursor: string | undefined;
  do {
    const next = await page(reader, { ...query, limit: 100, ...(cursor ? { cursor } : {}) });
    entries.push(...next.entries);
    cursor = next.nextCursor ?? undefined;
  } while (cursor);
  return entries;
}

/** Runs `act`, and returns its answer with the entries it added to the reader's log. */
async function recorded<A>(reader: Tenant, act: () => Promise<A>): Promise<{ answer: A; entries: AuditEntry[] }> {
  const known = new Set((await entriesOf(reader)).map((entry) => entry.id));
  const answer = await act();
  return { answer, entries: (await entriesOf(reader)).filter((entry) => !known.has(entry.id)) };
}

/** The one entry an action added, without its id and time (asserted apart where they matter). */
function only(entries: AuditEntry[]): Omit<AuditEntry, 'id' | 'at'> {
  assert.equal(entries.length, 1, `exactly one entry: ${JSON.stringify(entries)}`);
  const { id, at, ...rest } = entries[0]!;
  assert.ok(id && !Number.isNaN(Date.parse(at)));
  return rest;
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

let paths = 0;
/** A webhook whose receiver answers 500, driven to `disabled` by the service itself (one exhausted test delivery is enough here). */
async function disabledByService(owner: Tenant): Promise<client.WebhookCreated> {
  const path = `/down-${(paths += 1)}`;
  receiver.script(path, [{ status: 500 }]);
  const hook = expectData(await client.createWebhook({ url: receiver.url(path), events: ['item.deleted'] }, {}, as(owner.key)), 201);
  secrets.push(hook.secret);
  expectData(await client.testWebhook(hook.id, as(owner.key)), 202);
  await eventually('the webhook to be disabled', async () => {
    const read = expectData(await client.getWebhook(hook.id, as(owner.key)), 200);
    return read.status === 'disabled' ? read : undefined;
  });
  return hook;
}

/** `catalog ARGS` against the test's database, as the operator runs it. */
async function catalogCli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(...cliCommand(args), { env: testEnv(FILE, service.databaseUrl) as NodeJS.ProcessEnv });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** A record the relay parked, as the relay would have written it (the broker's refusal is not the subject here). */
async function parkedFixture(catalogId: string | null): Promise<string> {
  const event = domainEvent({ type: 'item.deleted', catalogId: catalogId ?? newId(), resourceId: `P-${newId()}`, data: {} });
  const row = eventRow(event);
  const id = newId();
  await sql.query(`INSERT INTO outbox_parked (id, event_id, topic, key, payload, type, catalog_id, reason, error_type, byte_size)
    VALUES ($1, $2, $3, $4, $5, $6, $7, 'The request included a message larger than the max message size the server will accept.', 'MESSAGE_TOO_LARGE', $8)`,
  [id, row.eventId, row.topic, row.key, row.payload, row.type, catalogId, Buffer.byteLength(row.payload)]);
  return id;
}

describe('each API action leaves exactly one entry: its actor, request, address and change', () => {
  test('keys: created, updated, revoked', async () => {
    const alice = await tenant();
    const actor = keyActor(alice.keyId, alice.key);
    const created = await recorded(alice, () => client.createKey({ scopes: ['catalog:read'], label: 'erp sync' }, as(alice.key)));
    const made = expectData(created.answer, 201);
    secrets.push(made.key);
    const { key, ...view } = made;
    assert.deepEqual(only(created.entries), {
      action: 'key.created', actor, requestId: requestIdOf(created.answer), clientAddress: '127.0.0.1',
      resource: { type: 'key', id: made.id }, before: null, after: view,
    });

    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const updated = await recorded(alice, () => client.updateKey(made.id, { expiresAt }, as(alice.key)));
    expectData(updated.answer, 200);
    assert.deepEqual(only(updated.entries), {
      action: 'key.updated', actor, requestId: requestIdOf(updated.answer), clientAddress: '127.0.0.1',
      resource: { type: 'key', id: made.id }, before: { expiresAt: null }, after: { expiresAt },
    });

    const revoked = await recorded(alice, () => client.revokeKey(made.id, as(alice.key)));
    assert.ok(expectData(revoked.answer, 200).revokedAt);
    assert.deepEqual(only(revoked.entries), {
      action: 'key.revoked', actor, requestId: requestIdOf(revoked.answer), clientAddress: '127.0.0.1',
      resource: { type: 'key', id: made.id }, before: { revokedAt: null }, after: { revokedAt: expectData(revoked.answer, 200).revokedAt },
    });
    // The made key acts under its own prefix and label.
    const self = await tenant();
    const labelled = expectData(await client.createKey({ scopes: ['keys:manage', 'audit:read'], label: 'rotation bot' }, as(self.key)), 201);
    secrets.push(labelled.key);
    const byLabelled = await recorded(self, () => client.createKey({ scopes: ['audit:read'] }, as(labelled.key)));
    secrets.push(expectData(byLabelled.answer, 201).key);
    assert.deepEqual(only(byLabelled.entries).actor, keyActor(labelled.id, labelled.key, 'rotation bot'));
  });

  test('webhooks: created, updated (only the changed fields), secret rotated, deleted; a delivery retried; deliveries recovered', async () => {
    const alice = await tenant();
    const actor = keyActor(alice.keyId, alice.key);
    const filter = { field: 'data.sku', equals: 'SHOE-1' };
    const created = await recorded(alice, () => client.createWebhook({ url: receiver.url('/hook'), events: ['*'], filter }, {}, as(alice.key)));
    const hook = expectData(created.answer, 201);
    secrets.push(hook.secret);
    receiver.secrets('/hook', [hook.secret]);
    // The backlog is the webhook's live state, not a setting: the entry records what was set.
    const { secret, backlog, ...view } = hook;
    assert.deepEqual(backlog, { waiting: 0, oldestWaitingSince: null, pausedUntil: null });
    assert.deepEqual(only(created.entries), {
      action: 'webhook.created', actor, requestId: requestIdOf(created.answer), clientAddress: '127.0.0.1',
      resource: { type: 'webhook', id: hook.id }, before: null, after: view,
    });
    assert.ok(!JSON.stringify(created.entries).includes(secret));

    const updated = await recorded(alice, () => client.updateWebhook(hook.id, { filter: null, events: ['*'] }, as(alice.key)));
    expectData(updated.answer, 200);
    assert.deepEqual(only(updated.entries), {
      action: 'webhook.updated', actor, requestId: requestIdOf(updated.answer), clientAddress: '127.0.0.1',
      resource: { type: 'webhook', id: hook.id }, before: { filter }, after: { filter: null },
    }, 'events were sent unchanged: not in the entry');

    const rotated = await recorded(alice, () => client.rotateWebhookSecret(hook.id, as(alice.key)));
    const rotation = expectData(rotated.answer, 200);
    secrets.push(rotation.secret);
    receiver.secrets('/hook', [rotation.secret, hook.secret]);
    assert.deepEqual(only(rotated.entries), {
      action: 'webhook.secret_rotated', actor, requestId: requestIdOf(rotated.answer), clientAddress: '127.0.0.1',
      resource: { type: 'webhook', id: hook.id }, before: { previousSecretExpiresAt: null }, after: { previousSecretExpiresAt: rotation.previousSecretExpiresAt },
    });

    // A delivery to retry: the test event, delivered once first.
    const ping = expectData(await client.testWebhook(hook.id, as(alice.key)), 202);
    await receiver.waitFor('the test delivery', (receipts) => receipts.some((r) => r.event.id === ping.eventId));
    const retried = await recorded(alice, () => client.retryWebhookDelivery(hook.id, ping.deliveryId, as(alice.key)));
    expectData(retried.answer, 202);
    assert.deepEqual(only(retried.entries), {
      action: 'webhook_delivery.retried', actor, requestId: requestIdOf(retried.answer), clientAddress: '127.0.0.1',
      resource: { type: 'webhook_delivery', id: ping.deliveryId }, before: null, after: { webhookId: hook.id, eventId: ping.eventId, status: 'pending' },
    });
    await receiver.waitFor('the retried delivery', (receipts) => receipts.filter((r) => r.event.id === ping.eventId).length === 2);

    const since = new Date(Date.now() - 3_600_000).toISOString();
    const recovered = await recorded(alice, () => client.recoverWebhook(hook.id, { since }, as(alice.key)));
    const { requeued } = expectData(recovered.answer, 202);
    const recovery = only(recovered.entries);
    const window = recovery.after as { since: string; until: string; requeued: number };
    assert.deepEqual({ ...recovery, after: { ...window, until: undefined } }, {
      action: 'webhook.recovered', actor, requestId: requestIdOf(recovered.answer), clientAddress: '127.0.0.1',
      resource: { type: 'webhook', id: hook.id }, before: null, after: { since, until: undefined, requeued },
    });
    assert.ok(Date.parse(window.until) > Date.parse(since));

    // Settled deliveries no longer touch the webhook: its view before the delete is what the entry keeps.
    await eventually('the retried delivery to settle', async () =>
      (expectData(await client.getWebhookDelivery(hook.id, ping.deliveryId, as(alice.key)), 200).status === 'succeeded' ? true : undefined));
    const { backlog: _, ...last } = expectData(await client.getWebhook(hook.id, as(alice.key)), 200);
    const deleted = await recorded(alice, () => client.deleteWebhook(hook.id, as(alice.key)));
    expectData(deleted.answer, 200);
    assert.deepEqual(only(deleted.entries), {
      action: 'webhook.deleted', actor, requestId: requestIdOf(deleted.answer), clientAddress: '127.0.0.1',
      resource: { type: 'webhook', id: hook.id }, before: last, after: null,
    });
  });

  test('webhook.disabled by the service after an exhausted delivery, then webhook.resumed by the key', async () => {
    const alice = await tenant();
    const hook = await disabledByService(alice);
    const disabled = only(await entriesOf(alice, { action: 'webhook.disabled' }));
    const read = expectData(await client.getWebhook(hook.id, as(alice.key)), 200);
    assert.deepEqual(disabled, {
      action: 'webhook.disabled', actor: { kind: 'service', keyId: null, keyPrefix: null, label: null, operator: null }, requestId: null, clientAddress: null,
      resource: { type: 'webhook', id: hook.id }, before: { status: 'active' }, after: { status: 'disabled', consecutiveFailures: 1, disabledAt: read.disabledAt },
    });

    receiver.script(new URL(hook.url).pathname, [{ status: 200 }]);
    const resumed = await recorded(alice, () => client.resumeWebhook(hook.id, as(alice.key)));
    expectData(resumed.answer, 200);
    assert.deepEqual(only(resumed.entries), {
      action: 'webhook.resumed', actor: keyActor(alice.keyId, alice.key), requestId: requestIdOf(resumed.answer), clientAddress: '127.0.0.1',
      resource: { type: 'webhook', id: hook.id },
      before: { status: 'disabled', consecutiveFailures: 1, disabledAt: read.disabledAt },
      after: { status: 'active', consecutiveFailures: 0, disabledAt: null },
    });
  });

  test('item.version_restored, with the item as externalSystem/externalId', async () => {
    const alice = await tenant();
    const id = `R-${RUN}`;
    expectData(await client.upsertItem({ externalSystem: 'erp', externalId: id, name: 'Mug' }, as(alice.key)), 201);
    expectData(await client.upsertItem({ externalSystem: 'erp', externalId: id, name: 'Mug XL' }, as(alice.key)), 200);
    const restored = await recorded(alice, () => client.restoreItemVersion('erp', id, 1, as(alice.key)));
    const result = expectData(restored.answer, 200);
    assert.deepEqual([result.outcome, result.item.name], ['updated', 'Mug']);
    assert.deepEqual(only(restored.entries), {
      action: 'item.version_restored', actor: keyActor(alice.keyId, alice.key), requestId: requestIdOf(restored.answer), clientAddress: '127.0.0.1',
      resource: { type: 'item', id: `erp/${id}` }, before: null, after: { restoredFromVersion: 1, outcome: 'updated', contentHash: result.contentHash },
    });
  });

  test('imports: cancelled, and retried (after.retryJobId is the new job)', async () => {
    const alice = await tenant();
    const actor = keyActor(alice.keyId, alice.key);
    const waiting = expectData(await client.createImport({ fileSizeBytes: 10 }, {}, as(alice.key)), 201);
    const status = expectData(await client.getImport(waiting.jobId, as(alice.key)), 200).status;
    const cancelled = await recorded(alice, () => client.cancelImport(waiting.jobId, as(alice.key)));
    expectData(cancelled.answer, 200);
    assert.deepEqual(only(cancelled.entries), {
      action: 'import.cancelled', actor, requestId: requestIdOf(cancelled.answer), clientAddress: '127.0.0.1',
      resource: { type: 'import', id: waiting.jobId }, before: { status }, after: { status: 'cancelled' },
    });

    const job = await runImport(as(alice.key), jsonl([item(`I-${RUN}`), '{"not json']));
    assert.equal(job.status, 'completed_with_errors');
    const retried = await recorded(alice, () => client.retryImport(job.id, as(alice.key)));
    const retry = expectData(retried.answer, 201);
    assert.deepEqual(only(retried.entries), {
      action: 'import.retried', actor, requestId: requestIdOf(retried.answer), clientAddress: '127.0.0.1',
      resource: { type: 'import', id: job.id }, before: null, after: { retryJobId: retry.jobId, lines: 1 },
    });
  });

  test('behind a trusted proxy the address is the last X-Forwarded-For entry', async () => {
    const alice = await tenant();
    const created = await recorded(alice, () =>
      client.createKey({ scopes: ['catalog:read'] }, as(alice.key, { 'x-forwarded-for': '198.51.100.7, 203.0.113.9' }, proxied.url)));
    secrets.push(expectData(created.answer, 201).key);
    const entry = only(created.entries);
    assert.deepEqual([entry.clientAddress, entry.requestId], ['203.0.113.9', requestIdOf(created.answer)]);
  });
});

test('a failed action leaves no entry, and neither does one that changes nothing', async () => {
  const alice = await tenant();
  const bob = await tenant();
  const hook = expectData(await client.createWebhook({ url: receiver.url('/quiet'), events: ['*'], description: 'ERP' }, { idempotencyKey: `quiet-${RUN}` }, as(alice.key)), 201);
  secrets.push(hook.secret);
  const made = expectData(await client.createKey({ scopes: ['catalog:read'] }, as(alice.key)), 201);
  secrets.push(made.key);
  const revoked = expectData(await client.createKey({ scopes: ['catalog:read'] }, as(alice.key)), 201);
  secrets.push(revoked.key);
  expectData(await client.revokeKey(revoked.id, as(alice.key)), 200);
  const itemId = `Q-${RUN}`;
  expectData(await client.upsertItem({ externalSystem: 'erp', externalId: itemId, name: 'Quiet' }, as(alice.key)), 201);
  const waiting = expectData(await client.createImport({ fileSizeBytes: 10 }, {}, as(alice.key)), 201);
  const bobsBefore = await entriesOf(bob);

  const { entries } = await recorded(alice, async () => {
    // Failures: refused before or inside the action's transaction.
    expectStatus(await client.updateWebhook(hook.id, { filter: { field: 'data.a..b', exists: true } }, as(alice.key)), 400);
    expectStatus(await client.revokeKey(bob.keyId, as(alice.key)), 404);
    expectStatus(await client.updateKey(made.id, { expiresAt: '2020-01-01T00:00:00Z' }, as(alice.key)), 400);
    expectStatus(await client.createKey({ scopes: ['catalog:read', 'admin'] }, as(alice.key)), 403);
    expectStatus(await client.restoreItemVersion('erp', itemId, 99, as(alice.key)), 404);
    expectStatus(await client.retryImport(waiting.jobId, as(alice.key)), 409);
    expectStatus(await client.resumeWebhook(newId(), as(alice.key)), 404);
    // No-ops: answered as successes, changing nothing.
    expectData(await client.updateWebhook(hook.id, { description: 'ERP', events: ['*'] }, as(alice.key)), 200);
    expectData(await client.updateKey(made.id, { allowedCidrs: null }, as(alice.key)), 200);
    expectData(await client.revokeKey(revoked.id, as(alice.key)), 200);
    expectData(await client.resumeWebhook(hook.id, as(alice.key)), 200);
    assert.equal(expectData(await client.restoreItemVersion('erp', itemId, 1, as(alice.key)), 200).outcome, 'unchanged');
    // A replayed idempotent create is the first one's answer, not a second creation.
    const replay = expectData(await client.createWebhook({ url: receiver.url('/quiet'), events: ['*'], description: 'ERP' }, { idempotencyKey: `quiet-${RUN}` }, as(alice.key)), 201);
    assert.equal(replay.id, hook.id);
  });
  assert.deepEqual(entries, []);
  assert.deepEqual(await entriesOf(bob), bobsBefore, 'the other catalog\'s log is untouched too');
});

// The stored filter (jsonb: shortest keys first) and the same filter as the client sent it differ by their keys' order only.
test('re-sending a webhook\'s filter as it was set changes nothing and leaves no entry', async () => {
  const alice = await tenant();
  // Keys in the order a client writes them; the database keeps jsonb keys in an order of its own.
  const filter = { field: 'changedFields', in: ['price', 'cost'] };
  const hook = expectData(await client.createWebhook({ url: receiver.url('/same-filter'), events: ['item.updated'], filter }, {}, as(alice.key)), 201);
  secrets.push(hook.secret);
  const same = await recorded(alice, () => client.updateWebhook(hook.id, { filter }, as(alice.key)));
  expectData(same.answer, 200);
  assert.deepEqual(same.entries, []);
});

test('console: a link minted (never its URL or token), the session started by it, ended by its user, another revoked by the operator', async () => {
  const alice = await tenant();
  const admin = keyActor(operator.keyId, operator.key);
  const mint = () => client.createConsoleLink({ catalog: alice.catalogId, scopes: ['catalog:read'] as CatalogScope[], label: 'support ticket 4711' }, as(operator.key));
  const minted = await recorded(alice, mint);
  const link = expectData(minted.answer, 201);
  const token = new URLSearchParams(new URL(link.url).hash.slice(1)).get('link')!;
  secrets.push(token, link.url);
  const { url, ...shown } = link;
  assert.deepEqual(only(minted.entries), {
    action: 'console_link.created', actor: admin, requestId: requestIdOf(minted.answer), clientAddress: '127.0.0.1',
    resource: { type: 'console_link', id: link.id }, before: null, after: shown,
  });
  assert.ok(!JSON.stringify(minted.entries).includes(token.slice(3)) && !JSON.stringify(minted.entries).includes(url));

  // Redeeming is public: the session it opens is the actor.
  const redeemed = await recorded(alice, () => client.redeemConsoleLink({ link: token }, as()));
  const session = expectData(redeemed.answer, 201);
  secrets.push(session.token);
  const sessionActor = { kind: 'console', keyId: session.id, keyPrefix: session.token.slice(0, 13), label: 'support ticket 4711', operator: null };
  const { token: sessionToken, ...started } = session;
  assert.ok(sessionToken);
  assert.deepEqual(only(redeemed.entries), {
    action: 'console_session.started', actor: sessionActor, requestId: requestIdOf(redeemed.answer), clientAddress: '127.0.0.1',
    resource: { type: 'console_session', id: session.id }, before: null, after: started,
  });
  const again = await recorded(alice, () => client.redeemConsoleLink({ link: token }, as()));
  expectStatus(again.answer, 401);
  assert.deepEqual(again.entries, [], 'a refused redeem leaves none');

  const ended = await recorded(alice, () => client.endConsoleSession(as(session.token)));
  const record = expectData(ended.answer, 200);
  assert.deepEqual(only(ended.entries), {
    action: 'console_session.ended', actor: sessionActor, requestId: requestIdOf(ended.answer), clientAddress: '127.0.0.1',
    resource: { type: 'console_session', id: session.id }, before: { state: 'active', revokedAt: null }, after: { state: 'revoked', revokedAt: record.revokedAt },
  });

  const other = expectData(await mint(), 201);
  const otherToken = new URLSearchParams(new URL(other.url).hash.slice(1)).get('link')!;
  secrets.push(otherToken);
  const otherSession = expectData(await client.redeemConsoleLink({ link: otherToken }, as()), 201);
  secrets.push(otherSession.token);
  const revoked = await recorded(alice, () => client.revokeConsoleSession(other.id, as(operator.key)));
  assert.deepEqual(only(revoked.entries), {
    action: 'console_session.revoked', actor: admin, requestId: requestIdOf(revoked.answer), clientAddress: '127.0.0.1',
    resource: { type: 'console_session', id: other.id }, before: { state: 'active', revokedAt: null },
    after: { state: 'revoked', revokedAt: expectData(revoked.answer, 200).revokedAt },
  });
  const twice = await recorded(alice, () => client.revokeConsoleSession(other.id, as(operator.key)));
  expectData(twice.answer, 200);
  assert.deepEqual(twice.entries, [], 'revoking a revoked session changes nothing');
  // A session's id is its actor's: what it did, read by that id.
  assert.deepEqual((await entriesOf(alice, { actor: session.id })).map((e) => e.action), ['console_session.ended', 'console_session.started']);

  // The operator's `catalog console` mints as the CLI; its link stays out of the log all the same.
  const byCli = await recorded(alice, () => catalogCli('console', '--catalog', alice.catalogId, '--read-only'));
  assert.equal(byCli.answer.code, 0, byCli.answer.stderr);
  const cliUrl = byCli.answer.stdout.trim().split('\n').at(-1)!;
  secrets.push(new URLSearchParams(new URL(cliUrl).hash.slice(1)).get('link')!);
  const cliLink = only(byCli.entries);
  assert.deepEqual([cliLink.action, cliLink.actor.kind, cliLink.clientAddress, cliLink.before], ['console_link.created', 'cli', null, null]);
  assert.deepEqual((cliLink.after as { scopes?: unknown }).scopes, ['catalog:read']);
  assert.ok(!('url' in (cliLink.after ?? {})));
});

test('parked records re-sent by the admin API and by `catalog outbox resend`: parked_record.resent, the CLI\'s with one request id per command', async () => {
  const alice = await tenant();
  const first = await parkedFixture(alice.catalogId);
  const resent = await recorded(alice, () => client.resendParkedRecord(first, as(operator.key)));
  const record = expectData(resent.answer, 202);
  assert.deepEqual(only(resent.entries), {
    action: 'parked_record.resent', actor: keyActor(operator.keyId, operator.key), requestId: requestIdOf(resent.answer), clientAddress: '127.0.0.1',
    resource: { type: 'parked_record', id: first }, before: { resentAt: null },
    after: { resentAt: record.resentAt, eventId: record.eventId, topic: record.topic, eventType: 'item.deleted' },
  });
  const twice = await recorded(alice, () => client.resendParkedRecord(first, as(operator.key)));
  expectStatus(twice.answer, 409);
  assert.deepEqual(twice.entries, []);

  const second = await parkedFixture(alice.catalogId);
  const byCli = await recorded(alice, () => catalogCli('outbox', 'resend', second));
  assert.equal(byCli.answer.code, 0, byCli.answer.stderr);
  const cliEntry = only(byCli.entries);
  assert.deepEqual({ ...cliEntry, actor: { ...cliEntry.actor, operator: undefined }, requestId: undefined, after: undefined }, {
    action: 'parked_record.resent', actor: { kind: 'cli', keyId: null, keyPrefix: null, label: null, operator: undefined }, requestId: undefined,
    clientAddress: null, resource: { type: 'parked_record', id: second }, before: { resentAt: null }, after: undefined,
  });
  assert.match(cliEntry.actor.operator ?? '', /.+@.+/);
  assert.ok(cliEntry.requestId);

  // Two records in one command: two entries under that command's one request id.
  const [third, fourth] = [await parkedFixture(alice.catalogId), await parkedFixture(alice.catalogId)];
  const all = await recorded(alice, () => catalogCli('outbox', 'resend', '--all', '--catalog', alice.catalogId));
  assert.equal(all.answer.code, 0, all.answer.stderr);
  assert.deepEqual(all.entries.map((entry) => entry.resource.id).sort(), [third, fourth].sort());
  const ids = new Set(all.entries.map((entry) => entry.requestId));
  assert.equal(ids.size, 1);
  assert.ok(![...ids].includes(null) && !ids.has(cliEntry.requestId), 'one fresh id per command run');

  // A record of no catalog has no log to go in: re-sent all the same.
  const orphan = await parkedFixture(null);
  expectData(await client.resendParkedRecord(orphan, as(operator.key)), 202);
  assert.equal((await sql.query('SELECT count(*)::int AS n FROM audit_log WHERE resource_id = $1', [orphan])).rows[0].n, 0);
});

test('CLI: catalogs create, keys create, update and revoke are the operator\'s entries; `catalog audit` prints them as JSON lines or a table, filtered by action', async () => {
  const name = `audit-cli-${RUN}`;
  const made = await catalogCli('catalogs', 'create', '--name', name, '--owner-email', 'owner@audit.example');
  assert.equal(made.code, 0, made.stderr);
  const catalogId = made.stdout.trim().split('\n').at(-1)!;
  const issue = async (scopes: string) => {
    const issued = await catalogCli('keys', 'create', '--catalog', name, '--scopes', scopes);
    assert.equal(issued.code, 0, issued.stderr);
    const key = issued.stdout.trim().split('\n').at(-1)!;
    secrets.push(key);
    return { key, keyId: /^Created key (\S+) /.exec(issued.stdout)![1]!, catalogId };
  };
  const reader = await issue('catalog:read,audit:read');
  const target = await issue('catalog:read');
  const updated = await catalogCli('keys', 'update', target.keyId, '--expires-in', '30d');
  assert.equal(updated.code, 0, updated.stderr);
  const revoked = await catalogCli('keys', 'revoke', target.keyId);
  assert.equal(revoked.code, 0, revoked.stderr);

  const entries = await entriesOf(reader);
  assert.deepEqual(entries.map((e) => [e.action, e.resource.type, e.resource.id]), [
    ['key.revoked', 'key', target.keyId], ['key.updated', 'key', target.keyId], ['key.created', 'key', target.keyId],
    ['key.created', 'key', reader.keyId], ['catalog.created', 'catalog', catalogId],
  ]);
  for (const entry of entries) {
    assert.deepEqual({ ...entry.actor, operator: undefined }, { kind: 'cli', keyId: null, keyPrefix: null, label: null, operator: undefined });
    assert.match(entry.actor.operator ?? '', /.+@.+/);
    assert.equal(entry.clientAddress, null);
    assert.ok(entry.requestId);
  }
  assert.equal(new Set(entries.map((e) => e.requestId)).size, entries.length, 'each command its own request id');
  const [revokedEntry, updatedEntry] = entries as [AuditEntry, AuditEntry];
  assert.deepEqual(Object.keys(updatedEntry.before ?? {}), ['expiresAt']);
  const expiresIn = Date.parse(String(updatedEntry.after?.expiresAt)) - Date.parse(updatedEntry.at);
  assert.ok(Math.abs(expiresIn - 30 * 86_400_000) < 3_600_000, `expires in 30 days (${expiresIn} ms)`);
  assert.deepEqual(revokedEntry.before, { revokedAt: null });
  assert.deepEqual((entries.at(-1)!.after), { id: catalogId, name, ownerEmail: 'owner@audit.example' });

  const json = await catalogCli('audit', '--catalog', name, '--json');
  assert.equal(json.code, 0, json.stderr);
  readings.push(json.stdout);
  assert.deepEqual(json.stdout.trim().split('\n').map((line) => JSON.parse(line)), entries.map((entry) => ({ catalogId, ...entry })));

  const table = await catalogCli('audit', '--catalog', name);
  assert.equal(table.code, 0, table.stderr);
  readings.push(table.stdout);
  const [header, ...rows] = table.stdout.trim().split('\n');
  assert.equal(header, 'AT\tCATALOG\tACTOR\tACTION\tRESOURCE\tADDRESS\tREQUEST');
  assert.deepEqual(rows, entries.map((e) => [e.at, catalogId, `cli ${e.actor.operator}`, e.action, `${e.resource.type}:${e.resource.id}`, '-', e.requestId].join('\t')));

  const filtered = await catalogCli('audit', '--catalog', name, '--action', 'key.revoked');
  assert.equal(filtered.code, 0, filtered.stderr);
  assert.deepEqual(filtered.stdout.trim().split('\n').slice(1), [rows[0]]);
  const ofKey = await catalogCli('audit', '--catalog', name, '--resource', `key:${target.keyId}`);
  assert.equal(ofKey.code, 0, ofKey.stderr);
  assert.deepEqual(ofKey.stdout.trim().split('\n').slice(1), rows.slice(0, 3));
});

test('reading: scope audit:read, one catalog\'s entries only, newest first, pages, filters, a bad cursor and an unknown actor', async () => {
  const alice = await tenant();
  const bob = await tenant();
  const second = expectData(await client.createKey({ scopes: ['keys:manage', 'audit:read'] }, as(alice.key)), 201);
  secrets.push(second.key);
  const third = expectData(await client.createKey({ scopes: ['catalog:read'] }, as(alice.key)), 201);
  secrets.push(third.key);
  expectData(await client.updateKey(third.id, { allowedCidrs: ['10.0.0.0/8'] }, as(second.key)), 200);
  expectData(await client.revokeKey(third.id, as(second.key)), 200);
  const hook = await disabledByService(alice);
  secrets.push(expectData(await client.createKey({ scopes: ['catalog:read'] }, as(bob.key)), 201).key);

  const noScope = await service.newTenant({ scopes: CATALOG_SCOPES });
  secrets.push(noScope.key);
  assert.equal((await client.listAuditLog({}, as(noScope.key))).status, 403);

  const all = await entriesOf(alice);
  const stored = (await sql.query<{ id: string }>('SELECT id::text FROM audit_log WHERE catalog_id = $1 ORDER BY at DESC, id DESC', [alice.catalogId])).rows;
  assert.deepEqual(all.map((e) => e.id), stored.map((r) => r.id), 'exactly the catalog\'s own rows, newest first');
  assert.ok(!(await entriesOf(bob)).some((e) => all.some((mine) => mine.id === e.id)));
  assert.deepEqual(all.map((e) => e.action), [
    'webhook.disabled', 'webhook.created', 'key.revoked', 'key.updated', 'key.created', 'key.created', 'key.created', 'catalog.created',
  ]);
  for (let i = 1; i < all.length; i += 1) assert.ok(all[i - 1]!.at >= all[i]!.at, 'newest first');

  const paged: AuditEntry[] = [];
  let cursor: string | undefined;
  do {
    const next = await page(alice, { limit: 2, ...(cursor ? { cursor } : {}) });
    assert.ok(next.entries.length <= 2);
    paged.push(...next.entries);
    cursor = next.nextCursor ?? undefined;
  } while (cursor);
  assert.deepEqual(paged, all, 'every entry once, in order');

  const ids = async (query: Parameters<typeof client.listAuditLog>[0]) => (await entriesOf(alice, query)).map((e) => e.id);
  const where = (keep: (e: AuditEntry) => boolean) => all.filter(keep).map((e) => e.id);
  assert.deepEqual(await ids({ actor: second.id }), where((e) => e.actor.keyId === second.id));
  assert.equal((await ids({ actor: second.id })).length, 2);
  assert.deepEqual(await ids({ actor: second.id.toUpperCase() }), await ids({ actor: second.id }));
  assert.deepEqual(await ids({ actor: alice.keyId }), where((e) => e.actor.keyId === alice.keyId));
  assert.deepEqual(await ids({ actor: 'cli' }), where((e) => e.actor.kind === 'cli'));
  assert.equal((await ids({ actor: 'cli' })).length, 2, 'the tenant\'s catalog and key were made as the operator\'s');
  assert.deepEqual(await ids({ actor: 'service' }), where((e) => e.action === 'webhook.disabled'));
  assert.deepEqual(await ids({ action: 'key.created' }), where((e) => e.action === 'key.created'));
  assert.deepEqual(await ids({ resourceType: 'webhook' }), where((e) => e.resource.type === 'webhook'));
  assert.deepEqual(await ids({ resourceId: third.id }), where((e) => e.resource.id === third.id));
  assert.equal((await ids({ resourceId: third.id })).length, 3);
  assert.deepEqual(await ids({ resourceType: 'webhook', resourceId: hook.id, action: 'webhook.created' }), where((e) => e.action === 'webhook.created'));
  // `at` is shown to the millisecond and stored to the microsecond: since an entry's `at` includes it, until excludes it.
  const middle = all[3]!;
  assert.deepEqual(await ids({ since: middle.at }), where((e) => e.at >= middle.at));
  assert.ok((await ids({ since: middle.at })).includes(middle.id));
  assert.deepEqual(await ids({ until: middle.at }), where((e) => e.at < middle.at));
  assert.deepEqual(await ids({ since: all.at(-1)!.at, until: new Date(Date.now() + 60_000).toISOString() }), all.map((e) => e.id));
  assert.deepEqual(await ids({ since: new Date(Date.now() + 60_000).toISOString() }), []);

  assert.equal(expectStatus(await client.listAuditLog({ cursor: 'not-a-cursor' }, as(alice.key)), 400).error.code, 'validation_error');
  assert.deepEqual(await page(alice, { actor: 'nobody' }), { entries: [], nextCursor: null }, 'an actor that is no id, cli or service matches nothing');
});

test('no secret reaches the audit log: not in its rows, not in any answer read from it', async () => {
  assert.ok(secrets.length > 20, `the tests saw secrets (${secrets.length})`);
  const rows = (await sql.query<{ row: string }>('SELECT audit_log::text AS row FROM audit_log')).rows.map((r) => r.row);
  assert.ok(rows.length > 50);
  const stored = rows.join('\n');
  const read = readings.join('\n');
  for (const secret of secrets) {
    // The part past a key's shown prefix (cat_live_XXXX), a webhook secret's whsec_ or a link's cl_ is what must never leak.
    const hidden = secret.startsWith('cat_') ? secret.slice(13) : secret.replace(/^(whsec_|cl_)/, '');
    for (const [where, text] of [['audit_log', stored], ['the answers', read]] as const) {
      assert.ok(!text.includes(secret) && !text.includes(hidden), `a secret (${secret.slice(0, 8)}…) is in ${where}`);
    }
  }
});

test('the purge deletes entries past AUDIT_LOG_RETENTION_DAYS and keeps the others', async () => {
  const alice = await tenant();
  const [keyCreated, catalogCreated] = await entriesOf(alice) as [AuditEntry, AuditEntry];
  assert.deepEqual([keyCreated.action, catalogCreated.action], ['key.created', 'catalog.created']);
  await sql.query(`UPDATE audit_log SET at = now() - interval '400 days' WHERE id = $1`, [catalogCreated.id]);
  await sql.query(`UPDATE audit_log SET at = now() - interval '300 days' WHERE id = $1`, [keyCreated.id]);
  const recent = only((await recorded(alice, () => client.createKey({ scopes: ['catalog:read'] }, as(alice.key)))).entries);

  // A consumers process purges on start (with the sent outbox rows), then every 10 minutes.
  const consumers = await startTestService(FILE, { DATABASE_URL: service.databaseUrl, ROLE: 'consumers', AUDIT_LOG_RETENTION_DAYS: '365' });
  try {
    await eventually('the purge', async () =>
      ((await sql.query('SELECT 1 FROM audit_log WHERE id = $1', [catalogCreated.id])).rows.length === 0 ? true : undefined));
  } finally {
    await consumers.close();
  }
  const left = await entriesOf(alice);
  assert.deepEqual(left.map((e) => e.action), [recent.action, 'key.created']);
  assert.equal(left[1]!.id, keyCreated.id, 'an entry within the retention stays');
});
