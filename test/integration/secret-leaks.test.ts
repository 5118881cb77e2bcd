// No secret in plain text anywhere it does not belong: every flow that handles one is driven at LOG_LEVEL=trace, then every log line, answer, audit entry and outbound request is searched for each secret the test saw or sent.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import type { RequestOpts } from '@oazapfts/runtime';
import * as api from '../../generated/client.ts';
import type { CreateApiKeyRequest, CreateImportRequest, ImportJob, WebhookDeliveryDetail } from '../../generated/client.ts';
import { randomToken } from '../../domain/access/key-store.ts';
import { freePort } from '../../scripts/free-port.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { contractCheckingFetch } from '../helpers/contract-check.ts';
import { sqlClient } from '../helpers/database.ts';
import { item, jsonl, startImportService, waitForJob } from '../helpers/imports.ts';
import { startJsonlOrigin } from '../helpers/jsonl-origin.ts';
import type { JsonlOrigin } from '../helpers/jsonl-origin.ts';
import { cliCommand } from '../helpers/runtime.ts';
import { ALL_SCOPES, testEnv } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
const run = promisify(execFile);
const SECRETS_KEY = randomBytes(32);
const SIGNING_SECRET = `signing-${randomBytes(24).toString('base64url')}`;
const SERVICE_ENV = {
  LOG_LEVEL: 'trace', WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_PRIVATE: 'true',
  SECRETS_KEY: SECRETS_KEY.toString('base64'), SIGNING_SECRET,
  // A failed attempt comes back within the test: the receiver's 500, then its 200.
  WEBHOOK_RETRY_DELAYS_MS: '0,200,200,200,200,200,200,200',
};

let service: TestService;
let sql: Awaited<ReturnType<typeof sqlClient>>;
let owner: Tenant;
let operator: Tenant;
let hooks: Receiver;
let source: Receiver;
let elsewhere: Receiver;
let origin: JsonlOrigin;

interface Form { readonly kind: string; readonly value: string }
interface Secret { readonly name: string; readonly forms: readonly Form[]; readonly shownBy: ReadonlySet<string> }
const secrets: Secret[] = [];

const bytesForms = (bytes: Buffer): Form[] => [
  { kind: 'base64', value: bytes.toString('base64') }, { kind: 'base64url', value: bytes.toString('base64url') }, { kind: 'hex', value: bytes.toString('hex') },
];

/** Remembers a secret the test saw or sent, in each form it could show in; `shownBy` names the answers that show it by design. */
function keep(name: string, value: string, shownBy: string[] = [], extra: Form[] = []): string {
  const forms = [{ kind: 'as is', value }, ...extra].filter((form, i, all) => all.findIndex((f) => f.value === form.value) === i);
  for (const form of forms) assert.ok(form.value.length >= 16, `${name} (${form.kind}) is too short to search for`);
  secrets.push({ name, forms, shownBy: new Set(shownBy) });
  return value;
}

/** A webhook secret: whole, the key after `whsec_`, and that key's bytes in other encodings. */
const keepWebhookSecret = (name: string, secret: string, shownBy: string[]) =>
  keep(name, secret, shownBy, [{ kind: 'after whsec_', value: secret.slice('whsec_'.length) }, ...bytesForms(Buffer.from(secret.slice('whsec_'.length), 'base64'))]);

/** Each kept secret found in `text`, unless `text` is the answer `answer` that shows it by design. */
function leaksIn(text: string, where: string, answer?: string): string[] {
  return secrets.flatMap((secret) => (answer !== undefined && secret.shownBy.has(answer) ? [] : secret.forms
    .filter((form) => text.includes(form.value)).map((form) => `${secret.name} (${form.kind}) in ${where}`)));
}

interface Answer { readonly what: string; readonly status: number; readonly text: string }
/** Every answer the service gave the test: its status, headers and body. */
const answers: Answer[] = [];

function recorded(what: string): typeof fetch {
  const checked = contractCheckingFetch();
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const response = await checked(input, init);
    answers.push({ what, status: response.status, text: `${JSON.stringify([...response.headers])}\n${await response.clone().text()}` });
    return response;
  }) as typeof fetch;
}

/** Client options whose answers are recorded under `what` (the name a secret's `shownBy` uses). */
const as = (what: string, key?: string): RequestOpts => ({ ...clientOptions(service.url, key), fetch: recorded(what) });

/** An API request with a raw Authorization header, its answer recorded. */
async function present(what: string, authorization: string, path = '/access'): Promise<{ status: number; body: { error: { message: string } } }> {
  const response = await recorded(what)(`${service.url}/api/v1/catalog${path}`, { headers: { authorization } });
  return { status: response.status, body: await response.json() };
}

/** The service's log lines, JSON-stringified, gathered as the test goes: the service keeps only its last 4 MB. */
const logLines: string[] = [];
function gatherLog(): void {
  const lines = service.logged().map((line) => JSON.stringify(line));
  const last = logLines.at(-1);
  const from = last === undefined ? 0 : lines.lastIndexOf(last) + 1;
  assert.ok(last === undefined || from > 0, 'the service\'s kept log was cut between two reads: gather it more often');
  logLines.push(...lines.slice(from));
}

before(async () => {
  [hooks, source, elsewhere, origin] = await Promise.all([startReceiver(), startReceiver(), startReceiver(), startJsonlOrigin()]);
  // On a known port: the signed upload address is built from it.
  service = await startImportService(FILE, SERVICE_ENV);
  sql = await sqlClient(service.databaseUrl);
  owner = await service.newTenant({ scopes: [...ALL_SCOPES, 'audit:read'] });
  operator = await service.newTenant({ scopes: ['admin'] });
  keep('the owner\'s key', owner.key);
  keep('the operator\'s admin key', operator.key);
  keep('SECRETS_KEY', SECRETS_KEY.toString('base64'), [], bytesForms(SECRETS_KEY));
  keep('SIGNING_SECRET', SIGNING_SECRET);
  gatherLog();
});
after(async () => {
  await sql?.end();
  await service?.close();
  await Promise.all([hooks?.close(), source?.close(), elsewhere?.close(), origin?.close()]);
});

test('keys: made through the API, used, limited, revoked; wrong, expired, revoked, foreign, fenced and malformed ones refused', async () => {
  const issue = async (label: string, extra: Partial<CreateApiKeyRequest> = {}) => {
    const made = expectData(await api.createKey({ scopes: ['catalog:read'], label, ...extra }, as(`createKey ${label}`, owner.key)), 201);
    keep(`the key made through the API (${label})`, made.key, [`createKey ${label}`]);
    return made;
  };
  const reader = await issue('reader');
  const expiring = await issue('expiring', { expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
  const revoked = await issue('revoked');
  const fenced = await issue('fenced', { allowedCidrs: ['10.0.0.0/8'] });
  expectData(await api.getAccess(as('getAccess as the reader', reader.key)), 200);
  expectData(await api.updateKey(reader.id, { allowedCidrs: ['127.0.0.1/32'] }, as('updateKey', owner.key)), 200);
  expectData(await api.revokeKey(revoked.id, as('revokeKey', owner.key)), 200);
  await sql.query(`UPDATE api_keys SET expires_at = now() - interval '1 hour' WHERE id = $1`, [expiring.id]);

  const wrong = keep('a key this service never issued', `cat_live_${randomToken()}`);
  const foreign = keep('a key of the other environment', `cat_test_${randomToken()}`);
  const basic = keep('a Basic credential', Buffer.from(`merchant:${randomToken()}`).toString('base64'));
  const [first, second, bare] = [1, 2, 3].map((n) => keep(`a token of a malformed Authorization header (${n})`, `cat_live_${randomToken()}`));
  const refusals: Array<[string, string, number, RegExp]> = [
    ['a wrong key', `Bearer ${wrong}`, 401, /invalid, expired or has been revoked/],
    ['an expired key', `Bearer ${expiring.key}`, 401, /expired at/],
    ['a revoked key', `Bearer ${revoked.key}`, 401, /invalid, expired or has been revoked/],
    ['a key of the other environment', `Bearer ${foreign}`, 401, /belongs to the staging environment/],
    ['a Basic credential', `Basic ${basic}`, 401, /must be "Bearer <API key>"/],
    ['two tokens', `Bearer ${first} ${second}`, 401, /must be "Bearer <API key>"/],
    ['a token without its scheme', bare!, 401, /must be "Bearer <API key>"/],
    ['a key fenced elsewhere', `Bearer ${fenced.key}`, 403, /may not be used from 127\.0\.0\.1/],
  ];
  for (const [what, authorization, status, message] of refusals) {
    const answer = await present(`refusal of ${what}`, authorization);
    assert.equal(answer.status, status, what);
    assert.match(answer.body.error.message, message, what);
  }
  assert.equal((await present('refusal of a wrong key on a public operation', `Bearer ${wrong}`, '/openapi.json')).status, 401);
  assert.equal((await present('refusal of a wrong key on an unknown route', `Bearer ${wrong}`, '/nowhere')).status, 401);
  expectStatus(await api.listKeys({}, as('listKeys without keys:manage', reader.key)), 403);
  gatherLog();
});

test('webhooks: secrets at creation and rotation, a keyed replay, a ping that fails once then arrives signed', async () => {
  const opts = (what: string) => as(what, owner.key);
  const one = expectData(await api.createWebhook({ url: hooks.url('/one'), events: ['item.created'] }, {}, opts('createWebhook /one')), 201);
  keepWebhookSecret('webhook /one\'s first secret', one.secret, ['createWebhook /one']);
  const request: api.CreateWebhookRequest = { url: hooks.url('/two'), events: ['*'] };
  const idempotencyKey = `hook-two-${randomUUID()}`;
  const two = expectData(await api.createWebhook(request, { idempotencyKey }, opts('createWebhook /two')), 201);
  // The replay is the creation's answer again, secret and all, by design: allowed there and nowhere else.
  keepWebhookSecret('webhook /two\'s secret', two.secret, ['createWebhook /two', 'createWebhook /two replayed']);
  assert.equal(expectData(await api.createWebhook(request, { idempotencyKey }, opts('createWebhook /two replayed')), 201).secret, two.secret);
  expectStatus(await api.createWebhook({ ...request, description: 'another body' }, { idempotencyKey }, opts('createWebhook /two, key reused')), 409);
  const rotated = expectData(await api.rotateWebhookSecret(one.id, opts('rotateWebhookSecret /one')), 200);
  keepWebhookSecret('webhook /one\'s rotated secret', rotated.secret, ['rotateWebhookSecret /one']);
  expectData(await api.updateWebhook(one.id, { description: 'orders' }, opts('updateWebhook')), 200);

  hooks.script('/one', [{ status: 500, body: 'receiver down' }, { status: 200 }]);
  hooks.secrets('/one', [rotated.secret, one.secret]);
  const ping = expectData(await api.testWebhook(one.id, opts('testWebhook')), 202);
  const pings = () => hooks.receipts('/one').filter((r) => r.event.id === ping.eventId);
  await hooks.waitFor('the ping, failed then delivered', () => pings().length >= 2);
  assert.deepEqual(pings().map((r) => r.signedWith), [[0, 1], [0, 1]], 'signed with the new secret and the one it replaced');
  let detail: WebhookDeliveryDetail | undefined;
  for (let i = 0; i < 600 && detail?.status !== 'succeeded'; i++) {
    if (i > 0) await new Promise((done) => setTimeout(done, 50));
    detail = expectData(await api.getWebhookDelivery(one.id, ping.deliveryId, opts('getWebhookDelivery')), 200);
  }
  assert.deepEqual(detail?.attempts.map((a) => a.statusCode), [500, 200]);
  expectData(await api.retryWebhookDelivery(one.id, ping.deliveryId, opts('retryWebhookDelivery')), 202);
  await hooks.waitFor('the retried ping', () => pings().length >= 3);
  gatherLog();
});

test('imports: a source\'s headers and signed query reach the source alone, through a 401, a 403, redirects, an unreachable address, an unsendable header; a signed upload; 400s name no header value', async () => {
  const opts = (what: string) => as(what, owner.key);
  const erpToken = `erp-${randomToken()}`;
  const bearer = keep('an import source\'s Authorization header', `Bearer ${erpToken}`, [], [{ kind: 'its token', value: erpToken }]);
  const apiKeyHeader = keep('an import source\'s X-Api-Key header', `xk-${randomToken()}`);
  const headers = { Authorization: bearer, 'X-Api-Key': apiKeyHeader };
  const sig = (of: string) => keep(`the sig= of ${of}`, randomToken());
  const importFrom = async (what: string, url: string): Promise<ImportJob> => {
    const job = expectData(await api.createImport({ source: { url, headers } }, {}, opts(`createImport ${what}`)), 202);
    return waitForJob(opts('getImport'), job.id);
  };

  origin.feed = jsonl([item('S-1'), item('S-2')]);
  assert.equal((await importFrom('feed', `${origin.url}/feed.jsonl?sig=${sig('the feed')}`)).status, 'completed');
  const sent = origin.requests.find((r) => r.path === '/feed.jsonl');
  assert.deepEqual([sent?.headers.authorization, sent?.headers['x-api-key']], [bearer, apiKeyHeader], 'the source got its headers');

  source.script('/unauthorized.jsonl', [{ status: 401, body: 'bad token' }]);
  source.script('/forbidden.jsonl', [{ status: 403, body: 'not yours' }]);
  for (const [path, status] of [['/unauthorized.jsonl', 401], ['/forbidden.jsonl', 403]] as const) {
    const job = await importFrom(path, `${source.url(path)}?sig=${sig(path)}`);
    assert.deepEqual([job.status, job.failureReason], ['failed', `the source answered HTTP ${status}`]);
  }
  assert.ok(source.receipts().length >= 2 && source.receipts().every((r) => r.headers.authorization === bearer));

  elsewhere.script('/moved.jsonl', [{ headers: { 'content-type': 'application/x-ndjson' }, body: jsonl([item('E-1')]).toString('utf8') }]);
  origin.elsewhere = `${elsewhere.url('/moved.jsonl')}?sig=${sig('the redirect to another origin')}`;
  assert.equal((await importFrom('redirected elsewhere', `${origin.url}/elsewhere?sig=${sig('an address redirecting elsewhere')}`)).status, 'completed');
  assert.ok(elsewhere.receipts('/moved.jsonl').length > 0, 'the other origin was asked');
  assert.ok(elsewhere.receipts().every((r) => r.headers.authorization === undefined && r.headers['x-api-key'] === undefined), 'headers go to the address\'s own origin only');

  origin.elsewhere = `ftp://files.example/feed.jsonl?sig=${sig('a refused redirect')}`;
  const refused = await importFrom('refused redirect', `${origin.url}/elsewhere?sig=${sig('an address redirecting to ftp')}`);
  assert.deepEqual([refused.status, refused.failureReason], ['failed', 'the source redirected to ftp://files.example/feed.jsonl, which must be an http(s) address']);
  // OUTBOUND_ALLOW_PRIVATE turns the network guard off; its refusal names the host as this one does (domain/imports/source.ts, unreachable()).
  const closed = await freePort();
  const unreachable = await importFrom('unreachable', `http://127.0.0.1:${closed}/feed.jsonl?sig=${sig('an unreachable address')}`);
  assert.deepEqual([unreachable.status, unreachable.failureReason], ['failed', `the source 127.0.0.1:${closed} is unreachable: connection refused`]);

  // A value no HTTP client can send (a control character): refused at once, the value not echoed.
  const unsendable = keep('a header value with a control character', randomToken());
  const refusedHeader = expectStatus(await api.createImport({ source: { url: `${origin.url}/feed.jsonl?sig=${sig('an address with an unsendable header')}`,
    headers: { 'X-Api-Key': `\u0001${unsendable}` } } }, {}, opts('createImport with an unsendable header')), 400);
  assert.equal(refusedHeader.error.details?.[0]?.path, 'source.headers.X-Api-Key');

  // A file uploaded to its signed address: the signature is shown by createImport alone (SIGNING_SECRET signs it).
  const file = jsonl([item('U-1')]);
  const created = expectData(await api.createImport({ fileSizeBytes: file.length }, {}, opts('createImport for an upload')), 201);
  const signature = keep('an upload address\'s signature', new URL(created.uploadUrl).searchParams.get('signature')!, ['createImport for an upload']);
  const put = (what: string, url: string) => recorded(what)(url, { method: 'PUT', headers: { 'content-type': 'application/x-ndjson' }, body: new Uint8Array(file) });
  const tampered = new URL(created.uploadUrl);
  tampered.searchParams.set('signature', `${signature.startsWith('0') ? '1' : '0'}${signature.slice(1)}`);
  assert.equal((await put('upload with a wrong signature', tampered.href)).status, 403);
  assert.equal((await put('upload', created.uploadUrl)).status, 200);
  expectData(await api.startImport(created.jobId, opts('startImport')), 202);
  assert.equal((await waitForJob(opts('getImport'), created.jobId)).status, 'completed');

  const smuggled = keep('a header value smuggled after a line break', randomToken());
  const password = keep('a password in a source address', randomToken());
  const overlong = keep('an over-long header value', randomToken());
  const bad: Array<[string, CreateImportRequest, string]> = [
    ['a line break', { source: { url: `${origin.url}/feed.jsonl`, headers: { Authorization: `${bearer}\r\nX-Extra: ${smuggled}` } } }, 'source.headers.Authorization'],
    ['credentials in the address', { source: { url: `http://merchant:${password}@127.0.0.1:${closed}/feed.jsonl` } }, 'source.url'],
    ['an over-long header', { source: { url: `${origin.url}/feed.jsonl`, headers: { 'X-Api-Key': `${overlong}${'x'.repeat(4096)}` } } }, 'source.headers.X-Api-Key'],
  ];
  for (const [what, body, path] of bad) {
    const refusal = expectStatus(await api.createImport(body, {}, opts(`createImport with ${what}`)), 400);
    assert.deepEqual(refusal.error.details?.map((d) => d.path), [path], what);
  }
  gatherLog();
});

test('console: a link minted, redeemed once, refused the second time, its session used and ended', async () => {
  const link = expectData(await api.createConsoleLink({ catalog: owner.catalogId, scopes: ['catalog:read', 'webhooks:manage', 'audit:read'], label: 'support' },
    as('createConsoleLink', operator.key)), 201);
  const linkToken = keep('the console link\'s token', new URLSearchParams(new URL(link.url).hash.slice(1)).get('link')!, ['createConsoleLink']);
  const session = expectData(await api.redeemConsoleLink({ link: linkToken }, as('redeemConsoleLink')), 201);
  keep('the console session\'s token', session.token, ['redeemConsoleLink']);
  assert.equal(expectStatus(await api.redeemConsoleLink({ link: linkToken }, as('redeemConsoleLink again')), 401).error.details?.[0]?.message, 'used');
  const unknown = keep('a console link never issued', `cl_${randomToken()}`);
  assert.equal(expectStatus(await api.redeemConsoleLink({ link: unknown }, as('redeemConsoleLink unknown')), 401).error.details?.[0]?.message, 'unknown');
  assert.equal(expectData(await api.getAccess(as('getAccess as the session', session.token)), 200).kind, 'console');
  expectData(await api.listWebhooks({}, as('listWebhooks as the session', session.token)), 200);
  expectData(await api.listAuditLog({}, as('listAuditLog as the session', session.token)), 200);
  expectData(await api.listConsoleSessions({ catalog: owner.catalogId }, as('listConsoleSessions', operator.key)), 200);
  assert.equal(expectData(await api.endConsoleSession(as('endConsoleSession', session.token)), 200).state, 'revoked');
  expectStatus(await api.getAccess(as('getAccess with the ended session', session.token)), 401);
  gatherLog();
});

test('reads after creation: keys, access, webhooks, deliveries, imports, events, console sessions', async () => {
  const opts = (what: string) => as(what, owner.key);
  expectData(await api.listKeys({ limit: 200 }, opts('listKeys')), 200);
  expectData(await api.getAccess(opts('getAccess')), 200);
  const { webhooks } = expectData(await api.listWebhooks({ limit: 200 }, opts('listWebhooks')), 200);
  assert.equal(webhooks.length, 2);
  for (const webhook of webhooks) {
    expectData(await api.getWebhook(webhook.id, opts('getWebhook')), 200);
    const { deliveries } = expectData(await api.listWebhookDeliveries(webhook.id, { limit: 200 }, opts('listWebhookDeliveries')), 200);
    for (const delivery of deliveries) expectData(await api.getWebhookDelivery(webhook.id, delivery.id, opts('getWebhookDelivery')), 200);
  }
  const { imports } = expectData(await api.listImports({ limit: 200 }, opts('listImports')), 200);
  assert.equal(imports.length, 7);
  for (const job of imports) expectData(await api.getImport(job.id, opts('getImport')), 200);
  expectData(await api.listEvents({ limit: 200 }, opts('listEvents')), 200);
  expectData(await api.listConsoleSessions({ limit: 200 }, as('listConsoleSessions', operator.key)), 200);
  expectData(await api.getAccess(as('getAccess as the operator', operator.key)), 200);
});

test('no secret in any audit entry: the table, GET /audit-log and `catalog audit --json`', async () => {
  const { rows } = await sql.query<{ action: string; entry: string }>('SELECT action, audit_log::text AS entry FROM audit_log ORDER BY at, id');
  const actions = new Set(rows.map((r) => r.action));
  for (const action of ['key.created', 'key.updated', 'key.revoked', 'webhook.created', 'webhook.secret_rotated', 'webhook.updated',
    'webhook_delivery.retried', 'console_link.created', 'console_session.started', 'console_session.ended']) {
    assert.ok(actions.has(action), `${action} is in the audit log: ${[...actions].join(', ')}`);
  }
  const leaks = rows.flatMap((r) => leaksIn(r.entry, `the audit_log row of ${r.action}`));

  const pages: string[] = [];
  let cursor: string | undefined;
  do {
    const page = expectData(await api.listAuditLog({ limit: 200, ...(cursor ? { cursor } : {}) }, as('listAuditLog', owner.key)), 200);
    pages.push(JSON.stringify(page));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  leaks.push(...pages.flatMap((page, i) => leaksIn(page, `GET /audit-log, page ${i + 1}`)));

  const env = testEnv(FILE, service.databaseUrl, SERVICE_ENV) as NodeJS.ProcessEnv;
  const cli = await run(...cliCommand(['audit', '--json', '--limit', '100000']), { env, maxBuffer: 64 * 1024 * 1024 });
  assert.equal(cli.stdout.trim().split('\n').length, rows.length, 'the command lists every entry');
  leaks.push(...leaksIn(cli.stdout, '`catalog audit --json` output'), ...leaksIn(cli.stderr, '`catalog audit --json` stderr'));
  assert.deepEqual(leaks, []);
});

test('no secret in any API answer after the one that made it, error answers included', () => {
  for (const secret of secrets) {
    for (const answer of secret.shownBy) {
      assert.ok(answers.some((a) => a.what === answer && a.text.includes(secret.forms[0]!.value)), `${answer} shows ${secret.name}: the search works`);
    }
  }
  assert.ok(answers.filter((a) => a.status === 401).length >= 12, 'the refusals are among the answers');
  assert.deepEqual(answers.flatMap((a) => leaksIn(a.text, `the ${a.status} answer of ${a.what}`, a.what)), []);
});

test('no secret reached a webhook receiver, nor the origin a source redirected to', async () => {
  await hooks.waitFor('the import events at the catch-all webhook', (r) => r.some((x) => x.path === '/two' && x.event.type === 'import.failed'));
  const receipts = [...hooks.receipts(), ...elsewhere.receipts()];
  assert.deepEqual(receipts.flatMap((r) => leaksIn(`${JSON.stringify(r.headers)}\n${r.rawBody.toString('utf8')}`, `the request ${r.path} received`)), []);
});

test('no secret in any log line at trace, the consumers\' lines included', () => {
  gatherLog();
  const parsed = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.ok(parsed.some((l) => l.level === 10 || l.level === 20), 'trace or debug lines were written');
  assert.ok(parsed.some((l) => l.msg === 'import failed'), 'the import consumer\'s lines are there');
  assert.ok(parsed.some((l) => l.component === 'webhook-dispatcher'), 'the webhook dispatcher\'s lines are there');
  const where = (l: Record<string, unknown>) => `the log line "${String(l.msg)}" (${String(l.component ?? 'service')}, ${String(l.time)})`;
  assert.deepEqual(logLines.flatMap((line, i) => leaksIn(line, where(parsed[i]!))), []);
});
