// Secrets at rest: a dump of the database shows no webhook secret, no import header or address's query value, and no stored answer holding a secret; a service with another key sends nothing unsigned and fails imports naming the key.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { WebhookCreated } from '../../generated/client.ts';
import { createSourceImport } from '../../domain/imports/source-jobs.ts';
import { createSecretBox, secretKey } from '../../platform/crypto/secret-box.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { dropDatabase, freshDatabase, sqlClient } from '../helpers/database.ts';
import { waitForJob } from '../helpers/imports.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { dropTopics } from '../helpers/spawned-service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
const run = promisify(execFile);
const KEY_A = randomBytes(32);
const KEY_B = randomBytes(32);
const ID_A = secretKey(KEY_A).id;
// A failed attempt is not retried while the test looks at it.
const SLOW_RETRIES = '0,600000,600000,600000,600000,600000,600000,600000';
const env = (key: Buffer, extra: Record<string, string> = {}) => ({
  SECRETS_KEY: key.toString('base64'), WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_DELAYS_MS: SLOW_RETRIES, ...extra,
});

let databaseUrl: string;
let receiver: Receiver;
let source: Receiver;
let first: TestService | undefined;
let second: TestService | undefined;
let tenant: Tenant;
let hooks: WebhookCreated[];

before(async () => {
  receiver = await startReceiver();
  source = await startReceiver();
  // A database of the file's own, named here: both services share it, and neither drops its topics on close.
  databaseUrl = await freshDatabase(FILE);
  first = await startTestService(FILE, env(KEY_A, { DATABASE_URL: databaseUrl }));
  tenant = await first.newTenant();
});
after(async () => {
  source?.releaseHeld();
  const topics = (first ?? second)?.kafka;
  const prefix = (first ?? second)?.config.kafkaTopicPrefix;
  await first?.close();
  await second?.close();
  await receiver?.close();
  await source?.close();
  if (topics && prefix) await dropTopics([...topics.brokers], prefix).catch(() => undefined);
  if (databaseUrl) await dropDatabase(databaseUrl);
});

/** A value as it could show in a dump: as is, in base64 and base64url, in hex. */
function forms(value: string | Buffer): string[] {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return [...(typeof value === 'string' ? [value] : []), bytes.toString('base64'), bytes.toString('base64url'), bytes.toString('hex')];
}

/** A webhook secret's forms, and those of the key it stands for (the bytes after `whsec_`). */
const secretForms = (secret: string) => [...forms(secret), ...forms(Buffer.from(secret.slice('whsec_'.length), 'base64'))];

test('a pg_dump holds no webhook secret (current or previous), no header or signed query of a running import, no answer replayed with a secret', async () => {
  const opts = clientOptions(first!.url, tenant.key);
  const create = async (path: string, idempotencyKey?: string) =>
    expectData(await api.createWebhook({ url: receiver.url(path), events: ['item.created'] }, idempotencyKey ? { idempotencyKey } : {}, opts), 201);
  const keyed = `create-two-${Date.now()}`;
  hooks = [await create('/one'), await create('/two', keyed)];
  assert.equal((await create('/two', keyed)).secret, hooks[1]!.secret, 'a keyed create replays its stored answer, secret and all');
  const rotated = expectData(await api.rotateWebhookSecret(hooks[0]!.id, opts), 200);
  const secrets = [hooks[0]!.secret, rotated.secret, hooks[1]!.secret];

  // An import whose source holds its answer: the job is running, its headers and its presigned address kept (sealed) meanwhile.
  const header = `Bearer erp-${randomBytes(18).toString('base64url')}`;
  const [credential, signature] = [`AKIA${randomBytes(8).toString('hex').toUpperCase()}`, randomBytes(32).toString('hex')];
  const signed = `?X-Amz-Credential=${credential}%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=${signature}`;
  source.script('/feed.jsonl', [{ hold: true }]);
  const created = expectData(await api.createImport({ source: { url: source.url(`/feed.jsonl${signed}`), headers: { Authorization: header } } }, {}, opts), 202);
  const [asked] = await source.waitFor('the import to fetch its source', (r) => r.some((x) => x.path === '/feed.jsonl'));
  assert.equal(asked!.headers.authorization, header, 'opened for the fetch');
  assert.equal(asked!.query, signed, 'the full address, opened for the fetch');
  const job = expectData(await api.getImport(created.id, opts), 200);
  const shown = JSON.stringify([created, job, expectData(await api.listImports({}, opts), 200)]);
  assert.ok(!shown.includes(credential) && !shown.includes(signature), shown);

  const sql = await sqlClient(databaseUrl);
  try {
    const { rows: [stored] } = await sql.query('SELECT source_url, source_url_sealed, source_headers_sealed FROM import_jobs WHERE id = $1', [job.id]);
    assert.match(stored.source_headers_sealed, new RegExp(`^v1\\.${ID_A}\\.`), 'sealed while the job runs');
    assert.match(stored.source_url_sealed, new RegExp(`^v1\\.${ID_A}\\.`), 'sealed while the job runs');
    assert.equal(stored.source_url, source.url('/feed.jsonl?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED'));
    const { rows } = await sql.query('SELECT secret, previous_secret FROM webhooks WHERE catalog_id = $1', [tenant.catalogId]);
    for (const row of rows) for (const value of [row.secret, row.previous_secret].filter(Boolean)) assert.match(value, new RegExp(`^v1\\.${ID_A}\\.`));
    const { rows: answers } = await sql.query('SELECT response_body FROM idempotency_keys WHERE catalog_id = $1', [tenant.catalogId]);
    assert.equal(answers.length, 1);
    assert.match(answers[0].response_body, new RegExp(`^v1\\.${ID_A}\\.`));
  } finally {
    await sql.end();
  }

  const { stdout: dump } = await run('pg_dump', [`--dbname=${databaseUrl}`], { maxBuffer: 512 * 1024 * 1024 });
  assert.ok(dump.includes(hooks[0]!.id) && dump.includes(job.id), 'the dump holds the rows');
  for (const secret of secrets) for (const form of secretForms(secret)) assert.ok(!dump.includes(form), `a form of a webhook secret is in the dump: ${form.slice(0, 12)}…`);
  for (const form of [...forms(header), ...forms(header.slice('Bearer '.length))]) assert.ok(!dump.includes(form), `a form of the header is in the dump: ${form.slice(0, 12)}…`);
  for (const form of [...forms(credential), ...forms(signature), ...forms(Buffer.from(signature, 'hex'))]) {
    assert.ok(!dump.includes(form), `a form of the address's query is in the dump: ${form.slice(0, 12)}…`);
  }

  source.releaseHeld();
  const ended = await waitForJob(opts, job.id);
  assert.equal(ended.status, 'failed');
  const check = await sqlClient(databaseUrl);
  try {
    const { rows } = await check.query('SELECT source_url_sealed, source_headers_sealed FROM import_jobs WHERE id = $1', [job.id]);
    assert.deepEqual(rows, [{ source_url_sealed: null, source_headers_sealed: null }], 'not kept past the job');
  } finally {
    await check.end();
  }
});

test('a service with another key: nothing is sent unsigned, the attempt names the key (logged once per webhook); an import fails naming it; rotating recovers', async () => {
  await first!.close();
  first = undefined;
  second = await startTestService(FILE, env(KEY_B, { DATABASE_URL: databaseUrl, LOG_LEVEL: 'error' }));
  const opts = clientOptions(second.url, tenant.key);
  const hook = hooks[1]!;
  receiver.secrets('/two', [hook.secret]);
  const pings = [expectData(await api.testWebhook(hook.id, opts), 202), expectData(await api.testWebhook(hook.id, opts), 202)];
  const attempted = async (deliveryId: string) => {
    for (let i = 0; i < 600; i++) {
      const detail = expectData(await api.getWebhookDelivery(hook.id, deliveryId, opts), 200);
      if (detail.attempts.length > 0) return detail;
      await new Promise((done) => setTimeout(done, 50));
    }
    throw new Error(`delivery ${deliveryId} was never attempted`);
  };
  for (const ping of pings) {
    const detail = await attempted(ping.deliveryId);
    assert.equal(detail.status, 'pending', 'retried later, as any failed send');
    assert.equal(detail.attempts[0]!.statusCode, null);
    assert.match(detail.attempts[0]!.error ?? '', new RegExp(`^not sent: .*sealed with key ${ID_A}, which is not configured here`));
  }
  assert.deepEqual(receiver.receipts('/two'), [], 'nothing reached the receiver');
  const logged = second.logged().filter((line) => line.webhookId === hook.id && line.keyId === ID_A);
  assert.equal(logged.length, 1, JSON.stringify(logged));
  assert.equal(logged[0]!.level, 50);

  // A job whose headers were sealed with the key this service lacks fails before any request.
  const boxA = createSecretBox({ current: secretKey(KEY_A) });
  const job = await createSourceImport(second.orm.em.fork(), boxA, tenant.catalogId,
    { url: source.url('/never.jsonl'), headers: { authorization: 'Bearer other' } }, false, true);
  const failed = await waitForJob(opts, job.id);
  assert.equal(failed.status, 'failed');
  assert.match(failed.failureReason ?? '', new RegExp(`headers cannot be opened: .*key ${ID_A}`));
  assert.deepEqual(source.receipts('/never.jsonl'), []);

  // The way out of a lost key: a new secret, signing alone at once (the old one cannot be opened to sign beside it).
  const rotated = expectData(await api.rotateWebhookSecret(hook.id, opts), 200);
  assert.ok(Date.parse(rotated.previousSecretExpiresAt) <= Date.now());
  receiver.secrets('/two', [rotated.secret]);
  const ping = expectData(await api.testWebhook(hook.id, opts), 202);
  const [receipt] = (await receiver.waitFor('the ping signed with the new secret', (r) => r.some((x) => x.event.id === ping.eventId))).filter((x) => x.event.id === ping.eventId);
  assert.deepEqual(receipt!.signedWith, [0]);
  assert.equal(receipt!.standardValid, true);
  assert.equal((receipt!.headers['x-service-signature'] as string).split(',').length, 2, 't= and one v1=');
});
