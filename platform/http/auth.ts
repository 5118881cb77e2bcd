// API-key authentication and the shared rate limit, one Postgres round trip per request.
import { hashKey } from '../../domain/access/api-keys.ts';
import type { Orm } from '../db/orm.ts';
import { prepared, query } from '../db/sql.ts';
import type { Auth } from './types.ts';
import { httpError } from './errors.ts';

export interface RateLimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds at which the current minute's window ends. */
  resetAt: number;
  retryAfter: number;
}

export interface AuthOutcome {
  auth: Auth | undefined;
  rateLimit: RateLimitState;
}

// Requests without a valid key are limited per client address at the free tier's rate,
// so unauthenticated traffic (and key guessing) cannot run unbounded.
const ANONYMOUS_LIMIT = 100;

const AUTHENTICATE = prepared('select * from authenticate_request($1, $2)');
const RATE_LIMIT_HIT = prepared('select * from rate_limit_hit($1, $2, $3)');

function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : '';
}

interface AuthRow {
  key_id: string;
  catalog_id: string;
  scopes: string[];
  tier: string;
  revoked: boolean;
  allowed: boolean;
  rate_limit: number;
  remaining: number;
  reset_at: string | number;
  retry_after: number;
}

/**
 * Resolves the key (if any) and counts the request against its budget. An Authorization
 * header that is present but unknown, malformed or revoked is refused with 401 even on a
 * public operation, so a client never silently runs with a key it believes is valid.
 */
export async function authenticate(orm: Orm, header: string | undefined, clientAddress: string): Promise<AuthOutcome & { refusal?: string }> {
  const now = Date.now() / 1000;
  const token = bearerToken(header);
  const em = orm.em;
  if (token) {
    const rows = await query<AuthRow>(em, AUTHENTICATE, [hashKey(token), now]);
    const row = rows[0];
    if (row && !row.revoked) {
      return {
        auth: { keyId: row.key_id, catalogId: row.catalog_id, scopes: row.scopes, tier: row.tier },
        rateLimit: {
          allowed: row.allowed,
          limit: row.rate_limit,
          remaining: row.remaining,
          resetAt: Number(row.reset_at),
          retryAfter: row.retry_after,
        },
      };
    }
  }
  const rows = await query<{ allowed: boolean; remaining: number; reset_at: string; retry_after: number }>(
    em,
    RATE_LIMIT_HIT,
    [`ip:${clientAddress}`, ANONYMOUS_LIMIT, now],
  );
  const hit = rows[0]!;
  const rateLimit = {
    allowed: hit.allowed,
    limit: ANONYMOUS_LIMIT,
    remaining: hit.remaining,
    resetAt: Number(hit.reset_at),
    retryAfter: hit.retry_after,
  };
  if (token === undefined) return { auth: undefined, rateLimit };
  const refusal = token === ''
    ? 'The Authorization header must be "Bearer <API key>".'
    : 'The API key is invalid or has been revoked.';
  return { auth: undefined, rateLimit, refusal };
}

export function requireScope(auth: Auth, scope: string | undefined): void {
  if (scope !== undefined && !auth.scopes.includes(scope)) {
    throw httpError('forbidden', `This API key lacks the "${scope}" scope required by this operation.`);
  }
}

export const unauthorized = (message = 'An API key is required: send "Authorization: Bearer <API key>".') =>
  httpError('unauthorized', message);
