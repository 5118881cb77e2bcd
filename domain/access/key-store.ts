// The api_keys store: keys issued and revoked (only a key's SHA-256 is stored), and each request's key looked up and counted.
import { createHash, randomBytes } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ApiKey as ApiKeyView, Scope } from '../../generated/client.ts';
import { prepared, query, sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { groupCommit } from '../../platform/group-commit.ts';
import { countStatement, rateLimitStates } from '../../platform/http/rate-limit.ts';
import type { CounterRow } from '../../platform/http/rate-limit.ts';
import { canonicalCidr } from '../../platform/http/client-address.ts';
import type { Auth, KeyLookup } from '../../platform/http/types.ts';
import type { Actor } from '../../platform/actor.ts';
import { ApiKey } from '../../platform/db/entities/catalogs.ts';
import { KEY_PREFIXES } from '../../platform/config/config.ts';
import type { Environment } from '../../platform/config/config.ts';
import { isId, newId } from '../../platform/ids.ts';
import { notFound, validationError } from '../../platform/errors.ts';
import { changedFields, recordAudit } from '../audit/audit-log.ts';
import { decodeCursor, encodeCursor, keysetPage } from '../pagination.ts';
import { isoTime } from '../items/view.ts';

// `admin` is the operator's: its routes act on every catalog (the parked outbox records, console links).
export const SCOPES = ['catalog:read', 'catalog:write', 'bulk_import:manage', 'webhooks:manage', 'stock:write', 'keys:manage', 'audit:read', 'admin'] as const;
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
    lastUsedAt: record.lastUsedAt?.toISOString() ?? null,
    allowedCidrs: record.allowedCidrs ? [...record.allowedCidrs] : null,
  };
}

// The contract's bound, kept for the operator's CLI too: a key's ranges are matched on each request.
const MAX_CIDRS = 50;

/** The ranges in canonical form; the ones that are not ranges are named by their place (`allowedCidrs.2`). */
function checkedCidrs(cidrs: readonly string[], details: { path: string; message: string }[]): string[] {
  if (cidrs.length === 0 || cidrs.length > MAX_CIDRS) details.push({ path: 'allowedCidrs', message: `must list 1 to ${MAX_CIDRS} address ranges` });
  return cidrs.map((cidr, i) => {
    const canonical = canonicalCidr(cidr);
    if (canonical === undefined) details.push({ path: `allowedCidrs.${i}`, message: `"${cidr}" is not an IPv4 or IPv6 range such as 203.0.113.0/24 (no bits set right of the prefix)` });
    return canonical ?? cidr;
  });
}

const inThePast = (expiresAt: Date | null | undefined): boolean => !!expiresAt && expiresAt.getTime() <= Date.now();

export interface IssuedKey {
  key: string;
  record: ApiKey;
}

export async function createApiKey(
  em: EntityManager,
  input: {
    catalogId: string; scopes: string[]; tier: string; rateLimitPerMinute?: number | null; environment?: Environment;
    label?: string | null; expiresAt?: Date | null; allowedCidrs?: readonly string[] | null;
  },
  actor: Actor,
): Promise<IssuedKey> {
  const scopes = [...new Set(input.scopes.map((s) => s.trim()).filter((s) => s !== ''))];
  const details = [];
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (scopes.length === 0) details.push({ path: 'scopes', message: `must name at least one of ${SCOPES.join(', ')}` });
  if (unknown.length > 0) details.push({ path: 'scopes', message: `unknown scope ${unknown.join(', ')}; known: ${SCOPES.join(', ')}` });
  if (!(TIERS as readonly string[]).includes(input.tier)) details.push({ path: 'tier', message: `must be one of ${TIERS.join(', ')}` });
  const limit = input.rateLimitPerMinute;
  if (limit !== undefined && limit !== null && (!Number.isInteger(limit) || limit < 1)) details.push({ path: 'rate-limit', message: 'must be a positive whole number of requests per minute' });
  if (inThePast(input.expiresAt)) details.push({ path: 'expiresAt', message: 'must be in the future' });
  const allowedCidrs = input.allowedCidrs ? checkedCidrs(input.allowedCidrs, details) : null;
  if (details.length > 0) throw validationError(details);
  const key = newKeyToken(input.environment);
  return em.transactional(async (tx) => {
    const record = tx.create(ApiKey, {
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
      allowedCidrs,
    });
    await tx.flush();
    await recordAudit(tx, actor, { catalogId: record.catalogId, action: 'key.created', resourceType: 'key', resourceId: record.id, before: null, after: keyView(record) });
    return { key, record };
  });
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
export async function findApiKey(
  em: EntityManager, keyId: string, within: { catalogId?: string; kind?: 'key' | 'console' } = {}, forUpdate = false,
): Promise<ApiKey> {
  const record = isId(keyId)
    ? await em.findOne(ApiKey, { id: keyId.toLowerCase(), ...within }, forUpdate ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {})
    : null;
  if (!record) throw notFound(`API key "${keyId}"`);
  return record;
}

/** Revokes a key at once; a revoked key keeps its first revocation time. */
export async function revokeApiKey(em: EntityManager, keyId: string, actor: Actor, within: { catalogId?: string; kind?: 'key' | 'console' } = {}): Promise<ApiKey> {
  return em.transactional(async (tx) => {
    const record = await findApiKey(tx, keyId, within, true);
    if (record.revokedAt) return record;
    const before = keyView(record);
    record.revokedAt = new Date();
    await tx.flush();
    await recordAudit(tx, actor, { catalogId: record.catalogId, action: 'key.revoked', resourceType: 'key', resourceId: record.id, ...changedFields(before, keyView(record))! });
    return record;
  });
}

/** Limits a key (the operator's, or through the API within one catalog): a field left undefined stays; null clears it. */
export async function limitApiKey(
  em: EntityManager,
  keyId: string,
  limits: { allowedCidrs?: readonly string[] | null; expiresAt?: Date | null },
  actor: Actor,
  within: { catalogId?: string; kind?: 'key' | 'console' } = {},
): Promise<ApiKey> {
  return em.transactional(async (tx) => {
    const record = await findApiKey(tx, keyId, within, true);
    const before = keyView(record);
    const details: { path: string; message: string }[] = [];
    if (inThePast(limits.expiresAt)) details.push({ path: 'expiresAt', message: 'must be in the future' });
    const allowedCidrs = limits.allowedCidrs ? checkedCidrs(limits.allowedCidrs, details) : limits.allowedCidrs;
    if (details.length > 0) throw validationError(details);
    if (allowedCidrs !== undefined) record.allowedCidrs = allowedCidrs;
    if (limits.expiresAt !== undefined) record.expiresAt = limits.expiresAt;
    const change = changedFields(before, keyView(record));
    if (change === undefined) return record;
    await tx.flush();
    await recordAudit(tx, actor, { catalogId: record.catalogId, action: 'key.updated', resourceType: 'key', resourceId: record.id, ...change });
    return record;
  });
}

interface AuthRow extends Partial<CounterRow> {
  key_id: string;
  kind: 'key' | 'console';
  catalog_id: string;
  scopes: string[];
  tier: string;
  revoked: boolean;
  expires_at: string | null;
  expired: boolean;
  allowed_cidrs: string[] | null;
  rate_limit: number;
}

// The key and its counted requests in one round trip: the key's row, then the count of the
// requests against its limit (the tier's requests per minute from the spec's table, unless the
// operator set one). A revoked or expired key is not counted; an unknown one returns no row.
// `used` records the key's use at most once a minute, so a busy key does not rewrite its row per
// request; SKIP LOCKED leaves the row to whoever holds it (another instance's touch, an update of
// the key), so no request ever waits on it and a skipped touch is made by a later request.
function authenticateStatement(keyHash: string, now: number, requests: number) {
  const hit = countStatement(sql`'key:' || k.id`, sql`(SELECT rate_limit FROM k)`, sql`FROM k WHERE NOT k.revoked AND NOT k.expired`, { now, requests });
  return prepared(sql`
    WITH k AS (
      SELECT a.id, a.kind, a.catalog_id, a.scopes, a.tier, a.revoked_at IS NOT NULL AS revoked, ${sql.raw(isoTime('a.expires_at'))} AS expires_at,
        coalesce(a.expires_at <= now(), false) AS expired, a.allowed_cidrs,
        coalesce(a.rate_limit_per_minute,
          CASE a.tier WHEN 'enterprise' THEN 10000 WHEN 'pro' THEN 1000 ELSE 100 END) AS rate_limit
      FROM api_keys a WHERE a.key_hash = ${keyHash}
    ), hit AS (${hit}), used AS (
      UPDATE api_keys SET last_used_at = now()
      WHERE id = (SELECT a.id FROM api_keys a
        WHERE a.id = (SELECT k.id FROM k WHERE NOT k.revoked AND NOT k.expired)
          AND (a.last_used_at IS NULL OR a.last_used_at < now() - interval '1 minute')
        FOR UPDATE SKIP LOCKED)
    )
    SELECT k.id AS key_id, k.kind, k.catalog_id, k.scopes, k.tier, k.revoked, k.expires_at, k.expired, k.allowed_cidrs, k.rate_limit,
      hit.count, hit.prev_count, hit.admitted
    FROM k LEFT JOIN hit ON true`);
}

/**
 * Returns `countKey(token)`: looks the key up and counts one request of it; undefined for an
 * unknown or revoked key, its expiry for an expired one. A key's requests that arrive while its statement runs share the next
 * one, admitted in arrival order (platform/group-commit.ts): under load they share round trips
 * and one turn at the counter row's lock, where a statement each would queue on that lock. The
 * budget and its exactness are the same.
 */
export function keyCounter(db: Db): (token: string) => Promise<KeyLookup | undefined> {
  const count = groupCommit<null, KeyLookup | undefined>(async (keyHash, group) => {
    const now = Date.now() / 1000;
    const [row] = await query<AuthRow>(db, 'access.authenticate_keys', authenticateStatement(keyHash, now, group.length));
    if (!row || row.revoked) return group.map(() => undefined);
    if (row.expired) return group.map(() => ({ expiredAt: row.expires_at! }));
    const auth: Auth = { keyId: row.key_id, kind: row.kind, catalogId: row.catalog_id, scopes: row.scopes, tier: row.tier };
    const allowedCidrs = row.allowed_cidrs;
    return rateLimitStates(row as AuthRow & CounterRow, row.rate_limit, now, group.length).map((rateLimit) => ({ auth, rateLimit, allowedCidrs }));
  }, { name: 'key count' });
  return (token) => count(hashKey(token), null);
}
