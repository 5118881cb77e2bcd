// Webhook secrets, import source headers and stored idempotent answers sealed at rest (platform/crypto/secret-box.ts): the values already stored are sealed with the current key, in the migration's transaction.
import { Migration } from '@mikro-orm/migrations';
import type { MigrationObject } from '@mikro-orm/core';
import { columnContext } from '../../crypto/secret-box.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { answerContext } from '../../http/idempotency.ts';
import { query } from '../sql.ts';
import type { Db } from '../sql.ts';
import { sealingKey } from './sealing-key.ts';

export const SEALED_SECRETS = '0025-sealed-secrets';

interface WebhookRow { id: string; secret: string; previous_secret: string | null }

// The contexts the stores open these values with (domain/webhooks/signing.ts, domain/imports/source-store.ts).
const secretOf = (id: string) => columnContext('webhooks', 'secret', id);
const previousOf = (id: string) => columnContext('webhooks', 'previous_secret', id);
const headersOf = (id: string) => columnContext('import_jobs', 'source_headers', id);

// Stored answers are kept without end (a key is reused after 24 h): sealed a thousand at a time.
const ANSWER_BATCH = 1000;

/** Every stored idempotent answer, sealed (or opened) with `change`, batch by batch in key order. */
async function changeAnswers(db: Db, change: (body: string, context: string) => string): Promise<void> {
  let after = ['00000000-0000-0000-0000-000000000000', '', ''];
  for (;;) {
    const rows = await query<{ catalog_id: string; operation: string; idempotency_key: string; response_body: string }>(db,
      `SELECT catalog_id, operation, idempotency_key, response_body FROM idempotency_keys
        WHERE response_body IS NOT NULL AND (catalog_id, operation, idempotency_key) > ($1::uuid, $2, $3)
        ORDER BY catalog_id, operation, idempotency_key LIMIT ${ANSWER_BATCH}`, after);
    if (rows.length === 0) return;
    const bodies = rows.map((r) => change(r.response_body, answerContext({ catalogId: r.catalog_id, operation: r.operation, key: r.idempotency_key })));
    await query(db, `UPDATE idempotency_keys k SET response_body = v.body
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[]) AS v(catalog_id, operation, idempotency_key, body)
      WHERE (k.catalog_id, k.operation, k.idempotency_key) = (v.catalog_id, v.operation, v.idempotency_key)`,
    [rows.map((r) => r.catalog_id), rows.map((r) => r.operation), rows.map((r) => r.idempotency_key), bodies]);
    const last = rows.at(-1)!;
    after = [last.catalog_id, last.operation, last.idempotency_key];
  }
}

const storedAnswers = async (db: Db): Promise<number> =>
  Number((await query<{ n: string }>(db, 'SELECT count(*) AS n FROM idempotency_keys WHERE response_body IS NOT NULL'))[0]!.n);

async function setWebhookSecrets(db: Db, rows: readonly WebhookRow[]): Promise<void> {
  if (rows.length === 0) return;
  await query(db, `UPDATE webhooks w SET secret = v.secret, previous_secret = v.previous_secret
    FROM unnest($1::uuid[], $2::text[], $3::text[]) AS v(id, secret, previous_secret) WHERE w.id = v.id`,
  [rows.map((r) => r.id), rows.map((r) => r.secret), rows.map((r) => r.previous_secret)]);
}

/**
 * MikroORM makes a migration's instance itself, so the key reaches this one through the closure
 * that makes its class. Without a box it still applies to a database with nothing to seal (a new
 * one), and refuses one that holds secrets, naming what it needs.
 */
export function sealedSecrets(secrets: SecretBox | undefined): MigrationObject['class'] {
  const box = sealingKey(secrets, SEALED_SECRETS, (count) => `${count} stored webhook secrets, import headers and idempotent answers`);

  return class SealedSecrets extends Migration {
    override name = SEALED_SECRETS;

    override async up(): Promise<void> {
      const db = this.getEntityManager() as unknown as Db;
      await query(db, 'ALTER TABLE import_jobs ADD COLUMN source_headers_sealed text');
      const webhooks = await query<WebhookRow>(db, 'SELECT id, secret, previous_secret FROM webhooks');
      const jobs = await query<{ id: string; headers: Record<string, string> }>(db,
        `SELECT id, source_headers AS headers FROM import_jobs WHERE source_headers IS NOT NULL AND source_headers <> '{}'::jsonb`);
      const answers = await storedAnswers(db);
      if (webhooks.length + jobs.length + answers > 0) {
        const key = box(webhooks.length + jobs.length + answers);
        await setWebhookSecrets(db, webhooks.map((r) => ({
          id: r.id, secret: key.seal(r.secret, secretOf(r.id)), previous_secret: r.previous_secret === null ? null : key.seal(r.previous_secret, previousOf(r.id)),
        })));
        await query(db, `UPDATE import_jobs j SET source_headers_sealed = v.sealed FROM unnest($1::uuid[], $2::text[]) AS v(id, sealed) WHERE j.id = v.id`,
          [jobs.map((r) => r.id), jobs.map((r) => key.seal(JSON.stringify(r.headers), headersOf(r.id)))]);
        await changeAnswers(db, (body, context) => key.seal(body, context));
      }
      await query(db, 'ALTER TABLE import_jobs DROP COLUMN source_headers');
    }

    override async down(): Promise<void> {
      const db = this.getEntityManager() as unknown as Db;
      await query(db, 'ALTER TABLE import_jobs ADD COLUMN source_headers jsonb');
      const webhooks = await query<WebhookRow>(db, 'SELECT id, secret, previous_secret FROM webhooks');
      const jobs = await query<{ id: string; sealed: string }>(db,
        'SELECT id, source_headers_sealed AS sealed FROM import_jobs WHERE source_headers_sealed IS NOT NULL');
      const answers = await storedAnswers(db);
      if (webhooks.length + jobs.length + answers > 0) {
        const key = box(webhooks.length + jobs.length + answers);
        await setWebhookSecrets(db, webhooks.map((r) => ({
          id: r.id, secret: key.open(r.secret, secretOf(r.id)), previous_secret: r.previous_secret === null ? null : key.open(r.previous_secret, previousOf(r.id)),
        })));
        await query(db, `UPDATE import_jobs j SET source_headers = v.headers::jsonb FROM unnest($1::uuid[], $2::text[]) AS v(id, headers) WHERE j.id = v.id`,
          [jobs.map((r) => r.id), jobs.map((r) => key.open(r.sealed, headersOf(r.id)))]);
        await changeAnswers(db, (body, context) => key.open(body, context));
      }
      await query(db, 'ALTER TABLE import_jobs DROP COLUMN source_headers_sealed');
    }
  };
}
