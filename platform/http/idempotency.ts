// Idempotency-Key: a repeated non-idempotent POST returns the first answer instead of acting twice.
import { createHash } from 'node:crypto';
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
 * Runs `act` at most once per key. The key row is inserted in the same transaction as the
 * change `act` makes, so a crash leaves either both or neither; a concurrent repeat waits on
 * the row lock and then replays the stored answer. When `act` fails, its change and the key
 * roll back together: nothing happened, so a retry with the same key runs again.
 */
export async function withIdempotency(
  em: Db,
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
      return { status: stored.status_code!, raw: stored.response_body!, contentType: 'application/json; charset=utf-8', headers: { 'idempotent-replayed': 'true' } };
    }
    const result = await act(tx);
    if ('data' in result) await store(tx, ids, result.status, JSON.stringify({ success: true, data: result.data }));
    return result;
  });
}

async function store(em: Db, ids: string[], status: number, body: string): Promise<void> {
  await query(em, 'idempotency.store_answer',
    'UPDATE idempotency_keys SET status_code = $1, response_body = $2 WHERE catalog_id = $3 AND operation = $4 AND idempotency_key = $5',
    [status, body, ...ids],
  );
}
