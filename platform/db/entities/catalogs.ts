// Entities of tenancy and access: catalogs and their API keys.
import { defineEntity, p } from '@mikro-orm/postgresql';
import type { InferEntity } from '@mikro-orm/postgresql';

export const Catalog = defineEntity({
  name: 'Catalog',
  tableName: 'catalogs',
  properties: {
    id: p.uuid().primary(),
    name: p.text(),
    ownerEmail: p.text(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Catalog = InferEntity<typeof Catalog>;

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: p.uuid().primary(),
    catalogId: p.uuid(),
    keyHash: p.text(),
    keyPrefix: p.text(),
    scopes: p.array(),
    tier: p.enum(['free', 'pro', 'enterprise'] as const),
    /** Operator override of the tier's requests per minute. */
    rateLimitPerMinute: p.integer().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    revokedAt: p.datetime().nullable(),
    /** `console`: a session opened by a console link (domain/access/console-links.ts). */
    kind: p.enum(['key', 'console'] as const).default('key'),
    expiresAt: p.datetime().nullable(),
    label: p.text().nullable(),
    /** Set by the authentication statement, at most once a minute (domain/access/key-store.ts). */
    lastUsedAt: p.datetime().nullable(),
    /** Canonical CIDR ranges the key may be used from; null: any address. */
    allowedCidrs: p.array().nullable(),
  },
});
export type ApiKey = InferEntity<typeof ApiKey>;
