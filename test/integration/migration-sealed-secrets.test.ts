// Upgrading a database with plain-text secrets: migration 0025 seals webhook secrets, import source headers and stored idempotent answers with the current key, they still sign and open, and its down migration gives them back.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { createDispatcher } from '../../consumers/webhooks/dispatcher.ts';
import type { Dispatcher } from '../../consumers/webhooks/dispatcher.ts';
import { sourceHeaders } from '../../domain/imports/source-store.ts';
import { newSecret } from '../../domain/webhooks/signing.ts';
import { createSecretBox, secretKey } from '../../platform/crypto/secret-box.ts';
import { newId } from '../../platform/ids.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { answerContext } from '../../platform/http/idempotency.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { dropDatabase, freshDatabase, sqlClient } from '../helpers/database.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn');
const key = secretKey(randomBytes(32));
const box = createSecretBox({ current: key });
const BEFORE = '0024-webhook-last-success';
let databaseUrl: string;
let orm: Orm;
let db: pg.Client;
let receiver: Receiver;
let dispatcher: Dispatcher | undefined;

before(async () => {
  databaseUrl = await freshDatabase(import.meta.url);
  // The schema as it was before: every migration up to 0024.
  orm = await openDatabase({ databaseUrl, logger, migrate: false, secrets: box });
  await orm.migrator.up({ to: BEFORE });
  db = await sqlClient(databaseUrl);
  receiver = await startReceiver();
});
after(async () => {
  await dispatcher?.stop();
  await receiver?.close();
  await db?.end();
  await orm?.close();
  if (databaseUrl) await dropDatabase(databaseUrl);
});

const sealedWithKey = new RegExp(`^v1\\.${key.id}\\.[A-Za-z0-9_-]+$`);

test('plain-text secrets are sealed by the upgrade and still sign; headers and stored answers still open; a downgrade opens them again', async () => {
  const [catalogId, live, plain, running, done] = [newId(), newId(), newId(), newId(), newId()];
  const [secret, previous, other] = [newSecret(), newSecret(), newSecret()];
  const headers = { authorization: 'Bearer erp-token-7f3a', 'x-tenant': 'shop' };
  const answer = JSON.stringify({ success: true, data: { id: plain, secret: other } });
  await db.query(`INSERT INTO catalogs (id, name, owner_email) VALUES ($1, $2, 'ops@example.com')`, [catalogId, `upgrade-${catalogId}`]);
  await db.query(`INSERT INTO webhooks (id, catalog_id, url, events, secret, previous_secret, previous_secret_expires_at)
    VALUES ($1, $3, $4, '{*}', $5, $6, now() + interval '1 hour'), ($2, $3, $4, '{*}', $7, NULL, NULL)`,
  [live, plain, catalogId, receiver.url('/old'), secret, previous, other]);
  for (const [id, stored] of [[running, JSON.stringify(headers)], [done, null]] as const) {
    await db.query(`INSERT INTO import_jobs (id, catalog_id, status, file_size_bytes, storage_path, source_url, source_headers)
      VALUES ($1, $2, 'queued', 0, $3, 'https://erp.example/feed.jsonl', $4)`, [id, catalogId, `imports/${id}.jsonl`, stored]);
  }
  await db.query(`INSERT INTO idempotency_keys (catalog_id, operation, idempotency_key, request_hash, status_code, response_body)
    VALUES ($1, 'createWebhook', 'key-1', 'h', 201, $2)`, [catalogId, answer]);
  const eventId = newId();
  const payload = JSON.stringify({ id: eventId, type: 'webhook.test', catalogId, resourceId: live, createdAt: new Date().toISOString(), data: {} });
  await db.query(`INSERT INTO webhook_deliveries (id, webhook_id, catalog_id, event_id, event_type, payload, next_attempt_at)
    VALUES ($1, $2, $3, $4, 'webhook.test', $5, now())`, [newId(), live, catalogId, eventId, payload]);

  // Without the key, the upgrade refuses a database holding secrets, and leaves it as it was.
  const keyless = await openDatabase({ databaseUrl, logger, migrate: false });
  try {
    await assert.rejects(keyless.migrator.up(), /0025-sealed-secrets must seal or open 4 stored .* needs the secrets key/);
  } finally {
    await keyless.close();
  }
  assert.deepEqual((await db.query('SELECT source_headers FROM import_jobs WHERE id = $1', [running])).rows, [{ source_headers: headers }]);

  await orm.migrator.up();
  const { rows: hooks } = await db.query('SELECT id, secret, previous_secret FROM webhooks ORDER BY id');
  for (const row of hooks) {
    assert.match(row.secret, sealedWithKey);
    if (row.id === live) assert.match(row.previous_secret, sealedWithKey);
    else assert.equal(row.previous_secret, null);
  }
  const { rows: columns } = await db.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'import_jobs' AND column_name LIKE 'source_headers%'`);
  assert.deepEqual(columns, [{ column_name: 'source_headers_sealed' }]);
  assert.deepEqual(await sourceHeaders(orm.em.fork(), box, running), headers);
  assert.deepEqual(await sourceHeaders(orm.em.fork(), box, done), {});
  const [stored] = (await db.query('SELECT response_body FROM idempotency_keys WHERE catalog_id = $1', [catalogId])).rows;
  assert.match(stored.response_body, sealedWithKey);
  assert.equal(box.open(stored.response_body, answerContext({ catalogId, operation: 'createWebhook', key: 'key-1' })), answer);

  // The delivery due from before the upgrade goes out signed with both secrets, as it would have.
  receiver.secrets('/old', [secret, previous]);
  dispatcher = createDispatcher({
    config: { databaseUrl, webhookRetryDelaysMs: [0, 1000, 1000, 1000, 1000, 1000, 1000, 1000], webhookTimeoutMs: 5000, webhookDisableAfter: 20, webhookAllowHttp: true, outboundAllowPrivate: true },
    db: orm.em.fork(), secrets: box, logger,
  });
  await dispatcher.start();
  const [receipt] = await receiver.waitFor('the delivery from before the upgrade', (r) => r.length > 0);
  await dispatcher.stop();
  dispatcher = undefined;
  assert.equal(receipt!.event.id, eventId);
  assert.deepEqual(receipt!.signedWith, [0, 1]);
  assert.equal(receipt!.standardValid, true);

  await orm.migrator.down({ to: BEFORE });
  assert.deepEqual((await db.query('SELECT id, secret, previous_secret FROM webhooks ORDER BY id')).rows,
    [{ id: live, secret, previous_secret: previous }, { id: plain, secret: other, previous_secret: null }].sort((a, b) => a.id.localeCompare(b.id)));
  assert.deepEqual((await db.query('SELECT id, source_headers FROM import_jobs ORDER BY id')).rows,
    [{ id: running, source_headers: headers }, { id: done, source_headers: null }].sort((a, b) => a.id.localeCompare(b.id)));
  assert.equal((await db.query('SELECT response_body FROM idempotency_keys WHERE catalog_id = $1', [catalogId])).rows[0].response_body, answer);
  await orm.migrator.up();
});
