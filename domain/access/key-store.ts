// The api_keys store: keys issued and revoked by the operator (only a key's SHA-256 is stored), and each request's key looked up and counted.
import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { prepared, query, sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { groupCommit } from '../../platform/group-commit.ts';
import { countStatement, rateLimitStates } from '../../platform/http/rate-limit.ts';
import type { CounterRow, RateLimitState } from '../../platform/http/rate-limit.ts';
import type { Auth } from '../../platform/http/types.ts';
import { ApiKey } from '../../platform/db/entities/catalogs.ts';
import { KEY_PREFIXES } from '../../platform/config/config.ts';
import type { Environment } from '../../platform/config/config.ts';
import { isId, newId } from '../../platform/ids.ts';
import { notFound, validationError } from '../../platform/errors.ts';

// `admin` is the operator's: its routes act on every catalog (the parked outbox records).
export const SCOPES = ['catalog:read', 'catalog:write', 'bulk_import:manage', 'webhooks:manage', 'stock:write', 'admin'] as const;
export const TIERS = ['free', 'pro', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** 32 base-62 characters (~190 bits); rejection sampling keeps every character equally likely. */
function randomToken(length = 32): string {
  let token = '';
  while (token.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && token.length < length) token += BASE62[byte % 62];
    }
  }
  return token;
}

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex');

export interface IssuedKey {
  key: string;
  record: ApiKey;
}

export async function createApiKey(
  em: EntityManager,
  input: { catalogId: string; scopes: string[]; tier: string; rateLimitPerMinute?: number; environment?: Environment },
): Promise<IssuedKey> {
  const scopes = [...new Set(input.scopes.map((s) => s.trim()).filter((s) => s !== ''))];
  const details = [];
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (scopes.length === 0) details.push({ path: 'scopes', message: `must name at least one of ${SCOPES.join(', ')}` });
  if (unknown.length > 0) details.push({ path: 'scopes', message: `unknown scope ${unknown.join(', ')}; known: ${SCOPES.join(', ')}` });
  if (!(TIERS as readonly string[]).includes(input.tier)) details.push({ path: 'tier', message: `must be one of ${TIERS.join(', ')}` });
  const limit = input.rateLimitPerMinute;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) details.push({ path: 'rate-limit', message: 'must be a positive whole number of requests per minute' });
  if (details.length > 0) throw validationError(details);
  const key = `${KEY_PREFIXES[input.environment ?? 'production']}${randomToken()}`;
  const record = em.create(ApiKey, {
    id: newId(),
    catalogId: input.catalogId,
    keyHash: hashKey(key),
    keyPrefix: key.slice(0, 13),
    scopes,
    tier: input.tier as Tier,
    rateLimitPerMinute: input.rateLimitPerMinute ?? null,
    createdAt: new Date(),
  });
  await em.flush();
  return { key, record };
}

export async function listApiKeys(em: EntityManager, catalogId: string): Promise<ApiKey[]> {
  return em.find(ApiKey, { catalogId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
}

export async function revokeApiKey(em: EntityManager, keyId: string): Promise<ApiKey> {
  const record = isId(keyId) ? await em.findOne(ApiKey, { id: keyId.toLowerCase() }) : null;
  if (!record) throw notFound(`API key "${keyId}"`);
  record.revokedAt ??= new Date();
  await em.flush();
  return record;
}

interface AuthRow extends Partial<CounterRow> {
  key_id: string;
  catalog_id: string;
  scopes: string[];
  tier: string;
  revoked: boolean;
  rate_limit: number;
}

/** A known, unrevoked key's identity and the counted request's place in its budget. */
export interface CountedKey {
  readonly auth: Auth;
  readonly rateLimit: RateLimitState;
}

// The key and its counted requests in one round trip: the key's row, then the count of the
// requests against its limit (the tier's requests per minute from the spec's table, unless the
// operator set one). A revoked key is not counted; an unknown one returns no row.
function authenticateStatement(keyHash: string, now: number, requests: number) {
  const hit = countStatement(sql`'key:' || k.id`, sql`(SELECT rate_limit FROM k)`, sql`FROM k WHERE NOT k.revoked`, { now, requests });
  return prepared(sql`
    WITH k AS (
      SELECT a.id, a.catalog_id, a.scopes, a.tier, a.revoked_at IS NOT NULL AS revoked,
        coalesce(a.rate_limit_per_minute,
          CASE a.tier WHEN 'enterprise' THEN 10000 WHEN 'pro' THEN 1000 ELSE 100 END) AS rate_limit
      FROM api_keys a WHERE a.key_hash = ${keyHash}
    ), hit AS (${hit})
    SELECT k.id AS key_id, k.catalog_id, k.scopes, k.tier, k.revoked, k.rate_limit, hit.count, hit.prev_count, hit.admitted
    FROM k LEFT JOIN hit ON true`);
}

/**
 * Returns `countKey(token)`: looks the key up and counts one request of it; undefined for an
 * unknown or revoked key. A key's requests that arrive while its statement runs share the next
 * one, admitted in arrival order (platform/group-commit.ts): under load they share round trips
 * and one turn at the counter row's lock, where a statement each would queue on that lock. The
 * budget and its exactness are the same.
 */
export function keyCounter(db: Db): (token: string) => Promise<CountedKey | undefined> {
  const count = groupCommit<null, CountedKey | undefined>(async (keyHash, group) => {
    const now = Date.now() / 1000;
    const [row] = await query<AuthRow>(db, 'access.authenticate_keys', authenticateStatement(keyHash, now, group.length));
    if (!row || row.revoked) return group.map(() => undefined);
    const auth: Auth = { keyId: row.key_id, catalogId: row.catalog_id, scopes: row.scopes, tier: row.tier };
    return rateLimitStates(row as AuthRow & CounterRow, row.rate_limit, now, group.length).map((rateLimit) => ({ auth, rateLimit }));
  }, { name: 'key count' });
  return (token) => count(hashKey(token), null);
}
