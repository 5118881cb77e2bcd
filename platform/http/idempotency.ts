// Idempotency-Key: a repeated non-idempotent POST returns the first answer instead of acting twice; the answer is kept sealed.
import { createHash } from 'node:crypto';
import { columnContext, sealedKeyIdSql } from '../crypto/secret-box.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import { query } from '../db/sql.ts';
import type { Db } from '../db/sql.ts';
import { httpError } from './errors.ts';
import type { HandlerResult } from './types.ts';

// A repeat within 24 h returns the first response (docs/rest-api.md, "Errors, retries and idempotency").
const KEY_LIFETIME_HOURS = 24;

export interface IdempotencyScope {
  catalogId: string;
  operation: string;
  key: string;
  /** What makes two requests "the same": the path (with its parameters) and the body. */
  path: string;
  body: unknown;
}

interface StoredRow {
  request_hash: string;
  status_code: number | null;
  response_body: string | null;
}

const requestHash = (scope: IdempotencyScope) =>
  createHash('sha256').update(`${scope.path}\n${JSON.stringify(scope.body ?? null)}`).digest('hex');

/**
 * The associated data of a stored answer: its key row. Answers are sealed because some carry what
 * is shown once and kept secret at rest (a new webhook's secret).
 */
export const answerContext = (row: { catalogId: string; operation: string; key: string }) =>
  `${columnContext('idempotency_keys', 'response_body', row.catalogId)}:${row.operation}:${row.key}`;

/**
 * Runs `act` at most once per key. The key row is inserted in the same transaction as the
 * change `act` makes, so a crash leaves either both or neither; a concurrent repeat waits on
 * the row lock and then replays the stored answer. When `act` fails, its change and the key
 * roll back together: nothing happened, so a retry with the same key runs again.
 */
export async function withIdempotency(
  em: Db,
  secrets: SecretBox,
  scope: IdempotencyScope,
  act: (em: Db) => Promise<HandlerResult>,
): Promise<HandlerResult> {
  const hash = requestHash(scope);
  return em.transactional(async (tx) => {
    const ids = [scope.catalogId, scope.operation, scope.key];
    const inserted = await query<{ inserted: boolean }>(tx, 'idempotency.claim_key',
      `INSERT INTO idempotency_keys AS k (catalog_id, operation, idempotency_key, request_hash)
       VALUES ($1, $2, $3, $4)
       ON CONFLICT (catalog_id, operation, idempotency_key) DO UPDATE
         SET request_hash = excluded.request_hash, status_code = NULL, response_body = NULL, created_at = now()
         WHERE k.created_at < now() - make_interval(hours => ${KEY_LIFETIME_HOURS})
       RETURNING true AS inserted`,
      [...ids, hash],
    );
    if (inserted.length === 0) {
      const [stored] = await query<StoredRow>(tx, 'idempotency.stored_answer',
        'SELECT request_hash, status_code, response_body FROM idempotency_keys WHERE catalog_id = $1 AND operation = $2 AND idempotency_key = $3',
        ids,
      );
      if (!stored || stored.request_hash !== hash) {
        throw httpError('conflict', 'Idempotency-Key was already used with a different request body.', [
          { path: 'Idempotency-Key', message: 'reuse it only to repeat the identical request' },
        ]);
      }
      return { status: stored.status_code!, raw: secrets.open(stored.response_body!, answerContext(scope)), contentType: 'application/json; charset=utf-8', headers: { 'idempotent-replayed': 'true' } };
    }
    const result = await act(tx);
    if ('data' in result) await store(tx, ids, result.status, secrets.seal(JSON.stringify({ success: true, data: result.data }), answerContext(scope)));
    return result;
  });
}

async function store(em: Db, ids: string[], status: number, body: string): Promise<void> {
  await query(em, 'idempotency.store_answer',
    'UPDATE idempotency_keys SET status_code = $1, response_body = $2 WHERE catalog_id = $3 AND operation = $4 AND idempotency_key = $5',
    [status, body, ...ids],
  );
}

/** How many stored answers each key seals (`catalog secrets status`); the key id read by sealedKeyIdSql. */
export async function storedAnswerKeys(db: Db): Promise<Array<{ column: string; keyId: string; values: number }>> {
  const rows = await query<{ key_id: string; n: string }>(db, 'idempotency.answer_keys', `SELECT ${sealedKeyIdSql('response_body')} AS key_id,
      count(*) AS n FROM idempotency_keys WHERE response_body IS NOT NULL GROUP BY 1 ORDER BY 1`);
  return rows.map((r) => ({ column: 'idempotency_keys.response_body', keyId: r.key_id, values: Number(r.n) }));
}

/** Re-seals with the current key up to `limit` stored answers sealed with another, in one transaction (`catalog secrets rotate`). */
export async function resealStoredAnswers(db: Db, secrets: SecretBox, limit: number): Promise<number> {
  return db.transactional(async (tx) => {
    const rows = await query<{ catalog_id: string; operation: string; idempotency_key: string; response_body: string }>(tx, 'idempotency.answers_to_reseal',
      `SELECT catalog_id, operation, idempotency_key, response_body FROM idempotency_keys
        WHERE response_body IS NOT NULL AND ${sealedKeyIdSql('response_body')} <> $1 LIMIT $2 FOR UPDATE`, [secrets.currentKeyId, limit]);
    if (rows.length === 0) return 0;
    const resealed = rows.map((r) => {
      const context = answerContext({ catalogId: r.catalog_id, operation: r.operation, key: r.idempotency_key });
      return secrets.seal(secrets.open(r.response_body, context), context);
    });
    await query(tx, 'idempotency.reseal_answers', `UPDATE idempotency_keys k SET response_body = v.body
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[]) AS v(catalog_id, operation, idempotency_key, body)
      WHERE (k.catalog_id, k.operation, k.idempotency_key) = (v.catalog_id, v.operation, v.idempotency_key)`,
    [rows.map((r) => r.catalog_id), rows.map((r) => r.operation), rows.map((r) => r.idempotency_key), resealed]);
    return rows.length;
  });
}
