// The api_keys store: keys issued and revoked (only a key's SHA-256 is stored), and each request's key looked up and counted.
import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ApiKey as ApiKeyView, Scope } from '../../generated/client.ts';
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
import { decodeCursor, encodeCursor, keysetPage } from '../pagination.ts';

// `admin` is the operator's: its routes act on every catalog (the parked outbox records, console links).
export const SCOPES = ['catalog:read', 'catalog:write', 'bulk_import:manage', 'webhooks:manage', 'stock:write', 'keys:manage', 'admin'] as const;
/** The scopes over one catalog: what a console link or a key made through the API may carry. */
export const CATALOG_SCOPES = SCOPES.filter((scope) => scope !== 'admin');
export const TIERS = ['free', 'pro', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** 32 base-62 characters (~190 bits); rejection sampling keeps every character equally likely. */
export function randomToken(length = 32): string {
  let token = '';
  while (token.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && token.length < length) token += BASE62[byte % 62];
    }
  }
  return token;
}

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** A new key (or console session token) of the deployment's environment: `cat_live_…`, `cat_test_…`. */
export const newKeyToken = (environment: Environment = 'production'): string => `${KEY_PREFIXES[environment]}${randomToken()}`;

/** What a key shows of itself: its first characters, enough to tell keys apart. */
export const keyPrefixOf = (key: string): string => key.slice(0, 13);

/** The wire shape; never the key nor its hash. */
export function keyView(record: ApiKey): ApiKeyView {
  return {
    id: record.id,
    prefix: record.keyPrefix,
    scopes: [...record.scopes] as Scope[],
    tier: record.tier,
    rateLimitPerMinute: record.rateLimitPerMinute ?? null,
    label: record.label ?? null,
    createdAt: record.createdAt.toISOString(),
    expiresAt: record.expiresAt?.toISOString() ?? null,
    revokedAt: record.revokedAt?.toISOString() ?? null,
  };
}

export interface IssuedKey {
  key: string;
  record: ApiKey;
}

export async function createApiKey(
  em: EntityManager,
  input: {
    catalogId: string; scopes: string[]; tier: string; rateLimitPerMinute?: number | null; environment?: Environment;
    label?: string | null; expiresAt?: Date | null;
  },
): Promise<IssuedKey> {
  const scopes = [...new Set(input.scopes.map((s) => s.trim()).filter((s) => s !== ''))];
  const details = [];
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (scopes.length === 0) details.push({ path: 'scopes', message: `must name at least one of ${SCOPES.join(', ')}` });
  if (unknown.length > 0) details.push({ path: 'scopes', message: `unknown scope ${unknown.join(', ')}; known: ${SCOPES.join(', ')}` });
  if (!(TIERS as readonly string[]).includes(input.tier)) details.push({ path: 'tier', message: `must be one of ${TIERS.join(', ')}` });
  const limit = input.rateLimitPerMinute;
  if (limit !== undefined && limit !== null && (!Number.isInteger(limit) || limit < 1)) details.push({ path: 'rate-limit', message: 'must be a positive whole number of requests per minute' });
  if (input.expiresAt && input.expiresAt.getTime() <= Date.now()) details.push({ path: 'expiresAt', message: 'must be in the future' });
  if (details.length > 0) throw validationError(details);
  const key = newKeyToken(input.environment);
  const record = em.create(ApiKey, {
    id: newId(),
    catalogId: input.catalogId,
    keyHash: hashKey(key),
    keyPrefix: keyPrefixOf(key),
    scopes,
    tier: input.tier as Tier,
    rateLimitPerMinute: input.rateLimitPerMinute ?? null,
    createdAt: new Date(),
    kind: 'key',
    expiresAt: input.expiresAt ?? null,
    label: input.label ?? null,
  });
  await em.flush();
  return { key, record };
}

/** Every credential of the catalog, console sessions included (the operator's list). */
export async function listApiKeys(em: EntityManager, catalogId: string): Promise<ApiKey[]> {
  return em.find(ApiKey, { catalogId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
}

/** The catalog's keys (not its console sessions), oldest first, a page at a time. */
export async function listCatalogKeys(
  em: EntityManager,
  catalogId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<{ keys: ApiKeyView[]; nextCursor: string | null }> {
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
  const where = after
    ? { catalogId, kind: 'key' as const, $or: [{ createdAt: { $gt: new Date(after.at) } }, { createdAt: new Date(after.at), id: { $gt: after.id } }] }
    : { catalogId, kind: 'key' as const };
  const rows = await em.find(ApiKey, where, { orderBy: { createdAt: 'asc', id: 'asc' }, limit: page.limit + 1 });
  const cut = keysetPage(rows, page.limit, (last) => encodeCursor({ at: last.createdAt.toISOString(), id: last.id }));
  return { keys: cut.rows.map(keyView), nextCursor: cut.nextCursor };
}

/** A credential by id, of any catalog (the operator's) or of one catalog only, and of one kind when given. */
export async function findApiKey(em: EntityManager, keyId: string, within: { catalogId?: string; kind?: 'key' | 'console' } = {}): Promise<ApiKey> {
  const record = isId(keyId) ? await em.findOne(ApiKey, { id: keyId.toLowerCase(), ...within }) : null;
  if (!record) throw notFound(`API key "${keyId}"`);
  return record;
}

/** Revokes a key at once; a revoked key keeps its first revocation time. */
export async function revokeApiKey(em: EntityManager, keyId: string, within: { catalogId?: string; kind?: 'key' | 'console' } = {}): Promise<ApiKey> {
  const record = await findApiKey(em, keyId, within);
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
// operator set one). A revoked or expired key is not counted; an unknown one returns no row.
function authenticateStatement(keyHash: string, now: number, requests: number) {
  const hit = countStatement(sql`'key:' || k.id`, sql`(SELECT rate_limit FROM k)`, sql`FROM k WHERE NOT k.revoked`, { now, requests });
  return prepared(sql`
    WITH k AS (
      SELECT a.id, a.catalog_id, a.scopes, a.tier, (a.revoked_at IS NOT NULL OR a.expires_at IS NOT NULL AND a.expires_at <= now()) AS revoked,
        coalesce(a.rate_limit_per_minute,
          CASE a.tier WHEN 'enterprise' THEN 10000 WHEN 'pro' THEN 1000 ELSE 100 END) AS rate_limit
      FROM api_keys a WHERE a.key_hash = ${keyHash}
    ), hit AS (${hit})
    SELECT k.id AS key_id, k.catalog_id, k.scopes, k.tier, k.revoked, k.rate_limit, hit.count, hit.prev_count, hit.admitted
    FROM k LEFT JOIN hit ON true`);
}

/**
 * Returns `countKey(token)`: looks the key up and counts one request of it; undefined for an
 * unknown, revoked or expired key. A key's requests that arrive while its statement runs share the next
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
