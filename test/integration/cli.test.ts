// The operator's command line: catalogs, keys and webhooks' paces, with the outputs docs/cli.md promises.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { domainEvent, eventRow, writeOutbox } from '../../domain/events/outbox.ts';
import { freePort } from '../../scripts/free-port.ts';
import { checkedFetch } from '../helpers/contract-check.ts';
import { sqlClient } from '../helpers/database.ts';
import { startTestService, testEnv } from '../helpers/service.ts';
import type { TestService } from '../helpers/service.ts';
import { cliCommand } from '../helpers/runtime.ts';

const FILE = import.meta.filename;
const run = promisify(execFile);
let service: TestService;

async function catalog(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return catalogWith({}, ...args);
}

async function catalogWith(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(...cliCommand(args), {
      env: { ...testEnv(FILE, service.databaseUrl), ...env } as NodeJS.ProcessEnv,
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
  assert.deepEqual([row[5], row[6], row[7]], ['-', 'key', '-']);

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

test('keys create --allow --expires-at fences and ends a key; keys update changes both; keys list shows them last', async () => {
  await catalog('catalogs', 'create', '--name', 'Fence Shop', '--owner-email', 'ops@fence.example');
  const expiry = new Date(Date.now() + 86_400_000).toISOString();
  const created = await catalog('keys', 'create', '--catalog', 'Fence Shop', '--scopes', 'catalog:read', '--allow', '10.0.0.0/8, 2001:db8::/32', '--expires-at', expiry);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, new RegExp(`expires ${expiry}, only from 10\\.0\\.0\\.0/8,2001:db8::/32\\)`));
  const key = lastLine(created.stdout);
  const url = `${service.url}/api/v1/catalog/items`;
  const fenced = await checkedFetch(url, { headers: { authorization: `Bearer ${key}` } });
  assert.deepEqual([fenced.response.status, fenced.body.error.message], [403, 'This API key may not be used from 127.0.0.1.']);

  const row = () => catalog('keys', 'list', '--catalog', 'Fence Shop').then((listed) => listed.stdout.trim().split('\n')[1]!.split('\t'));
  const before = await row();
  assert.equal(before.length, 10);
  assert.deepEqual([before[6], before[7], before[9]], ['key', expiry, '10.0.0.0/8,2001:db8::/32']);
  assert.notEqual(before[8], '-', 'the refused request still used the key');

  const opened = await catalog('keys', 'update', before[0]!, '--allow', '127.0.0.1', '--no-expiry');
  assert.equal(opened.code, 0, opened.stderr);
  assert.match(opened.stdout, /only from 127\.0\.0\.1\/32\.$/m);
  assert.equal((await checkedFetch(url, { headers: { authorization: `Bearer ${key}` } })).response.status, 200);
  const anywhere = await catalog('keys', 'update', before[0]!, '--allow-any', '--expires-in', '90d');
  assert.equal(anywhere.code, 0, anywhere.stderr);
  const after = await row();
  assert.equal(after[9], 'any');
  assert.ok(Math.abs(new Date(after[7]!).getTime() - Date.now() - 90 * 86_400_000) < 60_000, after[7]);

  const badRange = await catalog('keys', 'update', before[0]!, '--allow', '10.0.0.0/8,10.1.0.0/8');
  assert.equal(badRange.code, 1);
  assert.match(badRange.stderr, /allowedCidrs\.1/);
  const nothing = await catalog('keys', 'update', before[0]!);
  assert.equal(nothing.code, 2);
  const past = await catalog('keys', 'update', before[0]!, '--expires-at', '2020-01-01T00:00:00Z');
  assert.equal(past.code, 1);
  assert.match(past.stderr, /expiresAt/);
});

test('webhooks list shows a catalog\'s webhooks with their pace and backlog; webhooks rate-limit sets, changes and clears a pace as the API does, and refuses bad values', async () => {
  const tenant = await service.newTenant();
  const headers = { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' };
  const hooks = `${service.url}/api/v1/catalog/webhooks`;
  // A name that never resolves: the first delivery fails and waits for its retry, the others their slots 100 s apart.
  const created = await checkedFetch(hooks, {
    method: 'POST', headers, body: JSON.stringify({ url: 'https://hooks.invalid/cli', events: ['item.created'], rateLimit: { perSecond: 0.01 } }),
  });
  assert.equal(created.response.status, 201, JSON.stringify(created.body));
  const id: string = created.body.data.id;
  const events = [1, 2, 3].map((n) => domainEvent({ type: 'item.created', catalogId: tenant.catalogId, resourceId: `CLI-${n}`, data: { n } }));
  await service.orm.em.fork().transactional((em) => writeOutbox(em, events.map((event) => eventRow(event))));
  const read = async () => (await checkedFetch(`${hooks}/${id}`, { headers })).body.data;
  const deadline = Date.now() + 30_000;
  let webhook = await read();
  while (webhook.backlog.waiting < 3) {
    assert.ok(Date.now() < deadline, `the three deliveries were not made: ${JSON.stringify(webhook.backlog)}`);
    await new Promise((done) => setTimeout(done, 100));
    webhook = await read();
  }

  const listed = await catalog('webhooks', 'list', '--catalog', tenant.catalogId);
  assert.equal(listed.code, 0, listed.stderr);
  const [header, ...rows] = listed.stdout.trimEnd().split('\n');
  assert.equal(header, 'ID\tURL\tSTATUS\tRATE LIMIT\tWAITING\tOLDEST WAITING\tPAUSED UNTIL');
  assert.deepEqual(rows.map((row) => row.split('\t')), [[id, 'https://hooks.invalid/cli', 'active', '0.01/s', '3', webhook.backlog.oldestWaitingSince, '-']]);

  const set = await catalog('webhooks', 'rate-limit', id, '--per-second', '5', '--max-in-flight', '2');
  assert.equal(set.code, 0, set.stderr);
  assert.equal(set.stdout, `Webhook ${id} (https://hooks.invalid/cli): rate limit 5/s, at most 2 at once; 3 deliveries pending.\n`);
  assert.deepEqual((await read()).rateLimit, { perSecond: 5, maxInFlight: 2 });
  const changed = await catalog('webhooks', 'rate-limit', id, '--per-second', '0.5');
  assert.equal(changed.code, 0, changed.stderr);
  assert.deepEqual((await read()).rateLimit, { perSecond: 0.5 }, 'a new limit replaces the whole pace, as a PATCH does');

  const refused: Array<[string[], RegExp]> = [
    [['--per-second', '0'], /--per-second must be a number above 0 and at most 10000, got "0"/],
    [['--per-second', '10001'], /--per-second must be a number above 0 and at most 10000, got "10001"/],
    [['--per-second', 'lots'], /--per-second must be a number above 0 and at most 10000, got "lots"/],
    [['--per-second', '-5'], /--per-second/],
    [['--per-second', '5', '--max-in-flight', '0'], /--max-in-flight must be an integer from 1 to 1000, got "0"/],
    [['--per-second', '5', '--max-in-flight', '1.5'], /--max-in-flight must be an integer from 1 to 1000, got "1\.5"/],
    [['--per-second', '5', '--max-in-flight', '1001'], /--max-in-flight must be an integer from 1 to 1000/],
    [['--max-in-flight', '5'], /--max-in-flight needs --per-second/],
    [['--clear', '--per-second', '5'], /not both/],
    [[], /needs --per-second N \[--max-in-flight M\] or --clear/],
  ];
  for (const [flags, message] of refused) {
    const result = await catalog('webhooks', 'rate-limit', id, ...flags);
    assert.equal(result.code, 2, `${flags.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
    assert.match(result.stderr, /Usage: catalog webhooks/);
  }
  assert.deepEqual((await read()).rateLimit, { perSecond: 0.5 }, 'a refused value changes nothing');
  const unknown = await catalog('webhooks', 'rate-limit', '0190b7a2-0000-7000-8000-000000000000', '--clear');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /Webhook "0190b7a2-0000-7000-8000-000000000000" was not found/);

  const cleared = await catalog('webhooks', 'rate-limit', id, '--clear');
  assert.equal(cleared.code, 0, cleared.stderr);
  assert.match(cleared.stdout, /: rate limit none; \d+ deliver(y|ies) pending\.$/m);
  assert.equal((await read()).rateLimit, null);
  // Each change is the operator's in the catalog's audit log, with the pace before and after.
  const audit = await catalog('audit', '--catalog', tenant.catalogId, '--resource', `webhook:${id}`, '--action', 'webhook.updated', '--json');
  assert.equal(audit.code, 0, audit.stderr);
  const entries = audit.stdout.trim().split('\n').map((line) => JSON.parse(line)).reverse();
  assert.deepEqual(entries.map((e) => [e.actor.kind, e.before.rateLimit, e.after.rateLimit]), [
    ['cli', { perSecond: 0.01 }, { perSecond: 5, maxInFlight: 2 }],
    ['cli', { perSecond: 5, maxInFlight: 2 }, { perSecond: 0.5 }],
    ['cli', { perSecond: 0.5 }, null],
  ]);
});

test('console prints the link alone on its last line: the token in its fragment only, redeemable once', async () => {
  await catalog('catalogs', 'create', '--name', 'Console Shop', '--owner-email', 'ops@console.example');
  const result = await catalog('console', '--catalog', 'Console Shop', '--read-only', '--label', 'support ticket 4711');
  assert.equal(result.code, 0, result.stderr);
  const lines = result.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 2);
  assert.match(lines[0]!, /catalog "Console Shop" \(scopes catalog:read\).*redeem by \d{4}-\d\d-\d\dT/);
  const url = new URL(lastLine(result.stdout));
  assert.deepEqual([url.pathname, url.search], ['/console/', ''], 'the token is never in the path or the query, which servers log');
  const token = new URLSearchParams(url.hash.slice(1)).get('link') ?? '';
  assert.match(token, /^cl_[0-9A-Za-z]{32}$/);
  const sql = await sqlClient(service.databaseUrl);
  try {
    const { rows } = await sql.query('SELECT token_hash, scopes, label FROM console_links WHERE label = $1', ['support ticket 4711']);
    assert.equal(rows.length, 1);
    assert.notEqual(rows[0].token_hash, token);
    assert.deepEqual([rows[0].scopes, rows[0].label], [['catalog:read'], 'support ticket 4711']);
  } finally {
    await sql.end();
  }
  const redeem = () => checkedFetch(`${service.url}/api/v1/catalog/console-sessions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ link: token }),
  });
  const first = await redeem();
  assert.equal(first.response.status, 201);
  assert.deepEqual(first.body.data.scopes, ['catalog:read']);
  assert.equal((await redeem()).response.status, 401);

  const everything = await catalog('console', '--catalog', 'Console Shop');
  assert.equal(everything.code, 0, everything.stderr);
  assert.match(everything.stdout, /scopes catalog:read,catalog:write,bulk_import:manage,webhooks:manage,stock:write,keys:manage,audit:read\)/);
  const admin = await catalog('console', '--catalog', 'Console Shop', '--scopes', 'admin');
  assert.equal(admin.code, 1);
  assert.match(admin.stderr, /not a catalog scope: admin/);
  assert.equal((await catalog('console', '--catalog', 'Console Shop', '--scopes', 'catalog:read', '--read-only')).code, 2);
  const listed = await catalog('keys', 'list', '--catalog', 'Console Shop');
  const session = listed.stdout.trim().split('\n')[1]!.split('\t');
  assert.equal(session[6], 'console');
  assert.match(session[7]!, /^\d{4}-/);
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

test('--version, --help on every command, and a command group without its subcommand shows that group only', async () => {
  const version = await catalog('--version');
  assert.deepEqual([version.code, version.stdout], [0, `catalog ${JSON.parse(readFileSync('package.json', 'utf8')).version}\n`]);
  for (const command of ['serve', 'migrate', 'catalogs', 'keys', 'webhooks', 'console', 'import', 'doctor']) {
    const help = await catalog(command, '--help');
    assert.equal(help.code, 0, `${command} --help: ${help.stderr}`);
    assert.match(help.stdout, new RegExp(`^Usage: catalog ${command} `));
    assert.match(help.stdout, new RegExp(`\\n  ${command}\\b`));
  }
  assert.equal((await catalog('keys', 'create', '--help')).code, 0);
  const bare = await catalog('keys');
  assert.equal(bare.code, 2);
  assert.match(bare.stderr, /^catalog: keys needs one of: create, list, update, revoke\./);
  assert.match(bare.stderr, /Usage: catalog keys/);
  assert.doesNotMatch(bare.stderr, /catalogs create|import FILE/, 'only the keys commands');
  const wrong = await catalog('keys', 'make');
  assert.equal(wrong.code, 2);
  assert.match(wrong.stderr, /"keys make" is not a command; keys takes one of: create, list, update, revoke/);
});

test('the operator commands refuse a DATABASE_URL whose database does not exist, instead of making an empty one', async () => {
  const url = new URL(service.databaseUrl);
  url.pathname = `/${url.pathname.slice(1)}_missing`;
  const result = await catalogWith({ DATABASE_URL: url.toString() }, 'keys', 'list', '--catalog', 'x');
  assert.equal(result.code, 1);
  assert.match(result.stderr, /the database ".*_missing" does not exist .* run this with the DATABASE_URL the service uses/);
  const sql = await sqlClient(service.databaseUrl);
  try {
    const { rows } = await sql.query('SELECT 1 FROM pg_database WHERE datname = $1', [url.pathname.slice(1)]);
    assert.equal(rows.length, 0, 'no database was created');
  } finally {
    await sql.end();
  }
});

test('doctor: every check ok here, with what a second machine needs; a broker that does not answer is a FAIL line naming it, exit 1', async () => {
  const healthy = await catalog('doctor');
  assert.equal(healthy.code, 0, healthy.stdout + healthy.stderr);
  for (const what of ['configuration', 'database', 'broker', 'storage', 'console']) assert.match(healthy.stdout, new RegExp(`^ok +${what} `, 'm'));
  assert.match(healthy.stdout, /^ok +read replica +none: every read goes to the primary/m);
  // The primary named as the replica: reachable, but no standby.
  const primary = await catalogWith({ DATABASE_READ_URL: service.databaseUrl }, 'doctor');
  assert.equal(primary.code, 1);
  assert.match(primary.stdout, /^FAIL +read replica +.* is not a standby \(not in recovery\)/m);
  assert.match(healthy.stdout, /none pending/);
  // Local storage with a given SIGNING_SECRET: only the storage stands between this and a second machine.
  assert.match(healthy.stdout, /^ok +fleet +one machine as configured; processes on a second machine need shared storage \(STORAGE_DRIVER=s3/m);
  assert.doesNotMatch(healthy.stdout, /same SIGNING_SECRET/);
  const generated = await catalogWith({ SIGNING_SECRET: '' }, 'doctor');
  assert.match(generated.stdout, /^ok +fleet .*the same SIGNING_SECRET on every machine/m);
  const port = await freePort();
  const down = await catalogWith({ KAFKA_BROKERS: `127.0.0.1:${port}` }, 'doctor');
  assert.equal(down.code, 1);
  assert.match(down.stdout, new RegExp(`^FAIL +broker +127\\.0\\.0\\.1:${port} does not answer`, 'm'));
  const badConfig = await catalogWith({ MEDIA_RENDITIONS: 'thumb' }, 'doctor');
  assert.equal(badConfig.code, 1);
  assert.match(badConfig.stdout, /^FAIL +configuration +MEDIA_RENDITIONS must be/m);
});
