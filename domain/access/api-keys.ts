// API keys: issued and revoked by the operator; only a key's SHA-256 is ever stored.
import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey } from '../../platform/db/entities/catalogs.ts';
import { newId } from '../../platform/ids.ts';
import { notFound, validationError } from '../../platform/errors.ts';

export const SCOPES = ['catalog:read', 'catalog:write', 'bulk_import:manage', 'webhooks:manage', 'stock:write'] as const;
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
  input: { catalogId: string; scopes: string[]; tier: string; rateLimitPerMinute?: number },
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
  const key = `cat_live_${randomToken()}`;
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
  const record = /^[0-9a-f-]{36}$/i.test(keyId) ? await em.findOne(ApiKey, { id: keyId.toLowerCase() }) : null;
  if (!record) throw notFound(`API key "${keyId}"`);
  record.revokedAt ??= new Date();
  await em.flush();
  return record;
}
