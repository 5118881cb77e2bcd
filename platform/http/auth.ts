// API-key authentication and the shared rate limit: one Postgres round trip per request at most
// (a key's concurrent requests share one).
import type { EntityManager } from '@mikro-orm/postgresql';
import { hashKey } from '../../domain/access/api-keys.ts';
import type { Orm } from '../db/orm.ts';
import { prepared, query } from '../db/sql.ts';
import { countRequests, countStatement, rateLimitStates, windowStart } from './rate-limit.ts';
import type { CounterRow, RateLimitState } from './rate-limit.ts';
import type { Auth } from './types.ts';
import { httpError } from './errors.ts';

export interface AuthOutcome {
  auth: Auth | undefined;
  rateLimit: RateLimitState;
}

// Requests without a valid key are limited per client address at the free tier's rate,
// so unauthenticated traffic (and key guessing) cannot run unbounded.
const ANONYMOUS_LIMIT = 100;

function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : '';
}

interface AuthRow extends Partial<CounterRow> {
  key_id: string;
  catalog_id: string;
  scopes: string[];
  tier: string;
  revoked: boolean;
  rate_limit: number;
}

// The key and its counted requests in one round trip: the key's row, then the count of `$4`
// requests against its limit (the tier's requests per minute from the spec's table, unless the
// operator set one). A revoked key is not counted; an unknown one returns no row.
const AUTHENTICATE = prepared(`
  WITH k AS (
    SELECT a.id, a.catalog_id, a.scopes, a.tier, a.revoked_at IS NOT NULL AS revoked,
      coalesce(a.rate_limit_per_minute,
        CASE a.tier WHEN 'enterprise' THEN 10000 WHEN 'pro' THEN 1000 ELSE 100 END) AS rate_limit
    FROM api_keys a WHERE a.key_hash = $1
  ), hit AS (
    ${countStatement(`'key:' || k.id`, '(SELECT rate_limit FROM k)', 'FROM k WHERE NOT k.revoked')}
  )
  SELECT k.id AS key_id, k.catalog_id, k.scopes, k.tier, k.revoked, k.rate_limit, hit.count, hit.prev_count, hit.admitted
  FROM k LEFT JOIN hit ON true`);

interface KeyOutcome {
  row: AuthRow | undefined;
  state: RateLimitState | undefined;
}

interface Waiter {
  resolve(outcome: KeyOutcome): void;
  reject(error: unknown): void;
}

/** Per key hash: the requests waiting while that key's statement runs. */
const waiting = new Map<string, Waiter[]>();

/**
 * Looks a key up and counts one request of it. The requests of a key that arrive while its
 * statement runs wait, and the next statement counts them all, admitting them in arrival order:
 * under load a key's requests share round trips and one turn at the counter row's lock, where a
 * statement each would queue on that lock. The budget and its exactness are the same.
 */
function countKeyRequest(em: EntityManager, keyHash: string): Promise<KeyOutcome> {
  return new Promise((resolve, reject) => {
    const queue = waiting.get(keyHash);
    if (queue) {
      queue.push({ resolve, reject });
      return;
    }
    const started: Waiter[] = [{ resolve, reject }];
    waiting.set(keyHash, started);
    void drain(em, keyHash, started);
  });
}

async function drain(em: EntityManager, keyHash: string, queue: Waiter[]): Promise<void> {
  while (queue.length > 0) {
    const group = queue.splice(0);
    const now = Date.now() / 1000;
    try {
      const [row] = await query<AuthRow>(em, AUTHENTICATE, [keyHash, windowStart(now), now, group.length]);
      const states = row && !row.revoked ? rateLimitStates(row as AuthRow & CounterRow, row.rate_limit, now, group.length) : [];
      group.forEach((waiter, i) => waiter.resolve({ row, state: states[i] }));
    } catch (error) {
      for (const waiter of group) waiter.reject(error);
    }
  }
  waiting.delete(keyHash);
}

/**
 * Resolves the key (if any) and counts the request against its budget. An Authorization
 * header that is present but unknown, malformed or revoked is refused with 401 even on a
 * public operation, so a client never silently runs with a key it believes is valid.
 */
export async function authenticate(orm: Orm, header: string | undefined, clientAddress: string): Promise<AuthOutcome & { refusal?: string }> {
  const token = bearerToken(header);
  const em = orm.em;
  if (token) {
    const { row, state } = await countKeyRequest(em, hashKey(token));
    if (row && state) {
      return { auth: { keyId: row.key_id, catalogId: row.catalog_id, scopes: row.scopes, tier: row.tier }, rateLimit: state };
    }
  }
  const [rateLimit] = await countRequests(em, `ip:${clientAddress}`, ANONYMOUS_LIMIT, Date.now() / 1000);
  if (token === undefined) return { auth: undefined, rateLimit: rateLimit! };
  const refusal = token === ''
    ? 'The Authorization header must be "Bearer <API key>".'
    : 'The API key is invalid or has been revoked.';
  return { auth: undefined, rateLimit: rateLimit!, refusal };
}

export function requireScope(auth: Auth, scope: string | undefined): void {
  if (scope !== undefined && !auth.scopes.includes(scope)) {
    throw httpError('forbidden', `This API key lacks the "${scope}" scope required by this operation.`);
  }
}

export const unauthorized = (message = 'An API key is required: send "Authorization: Bearer <API key>".') =>
  httpError('unauthorized', message);
