// `catalog secrets status` and `catalog secrets rotate`: a key rotation re-seals every value with the new key, and a service given only that key still signs, fetches and replays.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { secretContext } from '../../domain/webhooks/signing.ts';
import { createSecretBox, secretKey } from '../../platform/crypto/secret-box.ts';
import { newId } from '../../platform/ids.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { dropDatabase, freshDatabase, sqlClient } from '../helpers/database.ts';
import { item, jsonl, waitForJob } from '../helpers/imports.ts';
import { startJsonlOrigin } from '../helpers/jsonl-origin.ts';
import type { JsonlOrigin } from '../helpers/jsonl-origin.ts';
import { cliCommand } from '../helpers/runtime.ts';
import { startTestService, testEnv } from '../helpers/service.ts';
import type { TestService } from '../helpers/service.ts';
import { dropTopics } from '../helpers/spawned-service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
const run = promisify(execFile);
const [KEY_A, KEY_B] = [randomBytes(32), randomBytes(32)];
const [ID_A, ID_B] = [secretKey(KEY_A).id, secretKey(KEY_B).id];
// More rows than one batch of the rotation.
const MANY = 650;
const b64 = (key: Buffer) => key.toString('base64');
const serviceEnv = { WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_PRIVATE: 'true' };

let databaseUrl: string;
let receiver: Receiver;
let origin: JsonlOrigin;
let service: TestService | undefined;
let topics: { brokers: readonly string[]; prefix: string } | undefined;

async function catalog(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(...cliCommand(args), { env: testEnv(FILE, databaseUrl, env) as NodeJS.ProcessEnv });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** `secrets status`'s table: column → key → values. */
function statusOf(stdout: string): Record<string, Record<string, number>> {
  const table: Record<string, Record<string, number>> = {};
  for (const line of stdout.trim().split('\n').slice(1, -1)) {
    const [column, keyId, values] = line.split('\t') as [string, string, string];
    (table[column] ??= {})[keyId] = Number(values);
  }
  return table;
}

before(async () => {
  receiver = await startReceiver();
  origin = await startJsonlOrigin();
  databaseUrl = await freshDatabase(FILE);
  // The api role alone at first: an import from an address stays queued, its address and headers sealed, until a consumers process runs.
  service = await startTestService(FILE, { ...serviceEnv, DATABASE_URL: databaseUrl, ROLE: 'api', SECRETS_KEY: b64(KEY_A) });
  topics = { brokers: service.kafka.brokers, prefix: service.config.kafkaTopicPrefix };
});
after(async () => {
  await service?.close();
  await receiver?.close();
  await origin?.close();
  if (topics) await dropTopics([...topics.brokers], topics.prefix).catch(() => undefined);
  if (databaseUrl) await dropDatabase(databaseUrl);
});

test('secrets rotate re-seals every value with the new key; status then shows it alone; a service with only that key signs, fetches and replays', async () => {
  const tenant = await service!.newTenant();
  const opts = clientOptions(service!.url, tenant.key);
  const hook = expectData(await api.createWebhook({ url: receiver.url('/rotated'), events: ['item.created'] }, { idempotencyKey: 'hook-1' }, opts), 201);
  const rotated = expectData(await api.rotateWebhookSecret(hook.id, opts), 200);
  origin.feed = jsonl([item('R-1'), item('R-2')]);
  const header = `Bearer erp-${randomBytes(12).toString('hex')}`;
  const job = expectData(await api.createImport({ source: { url: `${origin.url}/feed.jsonl`, headers: { Authorization: header } } }, {}, opts), 202);
  // Many more webhooks (disabled: no traffic), sealed with key A as the service would have.
  const boxA = createSecretBox({ current: secretKey(KEY_A) });
  const ids = Array.from({ length: MANY }, () => newId());
  const sql = await sqlClient(databaseUrl);
  try {
    await sql.query(`INSERT INTO webhooks (id, catalog_id, url, events, status, secret)
      SELECT id, $2, 'https://hooks.example/many', '{*}', 'disabled', secret FROM unnest($1::uuid[], $3::text[]) AS v(id, secret)`,
    [ids, tenant.catalogId, ids.map((id) => boxA.seal(`whsec_${id}`, secretContext(id)))]);

    const before = await catalog({ SECRETS_KEY: b64(KEY_A) }, 'secrets', 'status');
    assert.equal(before.code, 0, before.stderr);
    assert.deepEqual(statusOf(before.stdout), {
      'webhooks.secret': { [ID_A]: MANY + 1 }, 'webhooks.previous_secret': { [ID_A]: 1 },
      'import_jobs.source_headers_sealed': { [ID_A]: 1 }, 'import_jobs.source_url_sealed': { [ID_A]: 1 }, 'idempotency_keys.response_body': { [ID_A]: 1 },
    });
    assert.match(before.stdout, new RegExp(`^webhooks\\.secret\\t${ID_A}\\t${MANY + 1}\\tcurrent$`, 'm'));

    // Without the old key among SECRETS_OLD_KEYS nothing can be opened to re-seal: the command says which key it needs.
    const missing = await catalog({ SECRETS_KEY: b64(KEY_B) }, 'secrets', 'rotate');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, new RegExp(`sealed with key ${ID_A}, which is not configured here: add that key to SECRETS_OLD_KEYS`));

    const rotation = await catalog({ SECRETS_KEY: b64(KEY_B), SECRETS_OLD_KEYS: b64(KEY_A) }, 'secrets', 'rotate');
    assert.equal(rotation.code, 0, rotation.stderr + rotation.stdout);
    assert.match(rotation.stdout, new RegExp(`^webhooks: ${MANY + 2} value\\(s\\) re-sealed with key ${ID_B}$`, 'm'));
    assert.match(rotation.stdout, new RegExp(`^import_jobs: 2 value\\(s\\) re-sealed with key ${ID_B}$`, 'm'));
    assert.match(rotation.stdout, new RegExp(`^idempotency_keys: 1 value\\(s\\) re-sealed with key ${ID_B}$`, 'm'));
    assert.match(rotation.stdout, new RegExp(`SECRETS_OLD_KEYS can now drop key ${ID_A}`));

    const afterwards = await catalog({ SECRETS_KEY: b64(KEY_B) }, 'secrets', 'status');
    assert.deepEqual(statusOf(afterwards.stdout), {
      'webhooks.secret': { [ID_B]: MANY + 1 }, 'webhooks.previous_secret': { [ID_B]: 1 },
      'import_jobs.source_headers_sealed': { [ID_B]: 1 }, 'import_jobs.source_url_sealed': { [ID_B]: 1 }, 'idempotency_keys.response_body': { [ID_B]: 1 },
    });
    const again = await catalog({ SECRETS_KEY: b64(KEY_B), SECRETS_OLD_KEYS: b64(KEY_A) }, 'secrets', 'rotate');
    assert.match(again.stdout, /^webhooks: 0 value\(s\)/m, 'nothing left to do');
  } finally {
    await sql.end();
  }

  // Only the new key from here on: the old one is gone.
  await service!.close();
  service = await startTestService(FILE, { ...serviceEnv, DATABASE_URL: databaseUrl, SECRETS_KEY: b64(KEY_B) });
  const next = clientOptions(service.url, tenant.key);
  receiver.secrets('/rotated', [rotated.secret, hook.secret]);
  const ping = expectData(await api.testWebhook(hook.id, next), 202);
  const [receipt] = (await receiver.waitFor('the ping', (r) => r.some((x) => x.event.id === ping.eventId))).filter((x) => x.event.id === ping.eventId);
  assert.deepEqual(receipt!.signedWith, [0, 1], 'signed with the new secret and, for its last day, the one it replaced');
  assert.equal(receipt!.standardValid, true);
  const imported = await waitForJob(next, job.id);
  assert.equal(imported.status, 'completed');
  assert.equal(origin.requests.find((r) => r.path === '/feed.jsonl')?.headers.authorization, header);
  const replayed = expectData(await api.createWebhook({ url: receiver.url('/rotated'), events: ['item.created'] }, { idempotencyKey: 'hook-1' }, next), 201);
  assert.deepEqual([replayed.id, replayed.secret], [hook.id, hook.secret]);
});
