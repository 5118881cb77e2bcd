// What a credential may see and do with its own catalog's keys: describe itself, list, issue (never beyond its own scopes), limit and revoke.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Access, ApiKey as ApiKeyView, ApiKeyCreated, Scope } from '../../generated/client.ts';
import type { Actor } from '../../platform/actor.ts';
import type { Environment } from '../../platform/config/config.ts';
import { ProductError } from '../../platform/errors.ts';
import type { Auth } from '../../platform/http/types.ts';
import { findCatalog } from './catalogs.ts';
import { createApiKey, findApiKey, keyView, limitApiKey, revokeApiKey } from './key-store.ts';

/** The calling credential as `GET /access` shows it. */
export async function accessOf(em: EntityManager, auth: Auth): Promise<Access> {
  const record = await findApiKey(em, auth.keyId);
  const catalog = await findCatalog(em, auth.catalogId);
  return {
    catalogId: catalog.id,
    catalogName: catalog.name,
    keyId: record.id,
    kind: record.kind,
    scopes: [...record.scopes] as Scope[],
    expiresAt: record.expiresAt?.toISOString() ?? null,
    label: record.label ?? null,
  };
}

export interface KeyRequest {
  readonly scopes: readonly string[];
  readonly label?: string | undefined;
  readonly expiresAt?: string | undefined;
  readonly allowedCidrs?: readonly string[] | undefined;
}

export interface KeyLimitsRequest {
  readonly allowedCidrs?: readonly string[] | null | undefined;
  readonly expiresAt?: string | null | undefined;
}

/**
 * Issues a key of the caller's catalog with the caller's tier and rate limit. Its scopes are
 * among the caller's own, and never `admin`: a credential never makes one that can do more.
 */
export async function issueKey(em: EntityManager, caller: Auth, request: KeyRequest, environment: Environment, actor: Actor): Promise<ApiKeyCreated> {
  const refused = request.scopes.filter((scope) => scope === 'admin' || !caller.scopes.includes(scope));
  if (refused.length > 0) {
    const why = refused.includes('admin') ? '`admin` is only issued by the operator' : 'a key never grants more than the credential that makes it';
    throw new ProductError('forbidden', `This credential cannot grant ${refused.join(', ')}: ${why}.`, [{ path: 'scopes', message: `not grantable: ${refused.join(', ')}` }]);
  }
  const own = await findApiKey(em, caller.keyId);
  const issued = await createApiKey(em, {
    catalogId: caller.catalogId,
    scopes: [...request.scopes],
    tier: own.tier,
    rateLimitPerMinute: own.rateLimitPerMinute ?? null,
    environment,
    label: request.label ?? null,
    expiresAt: request.expiresAt === undefined ? null : new Date(request.expiresAt),
    allowedCidrs: request.allowedCidrs ?? null,
  }, actor);
  return { ...keyView(issued.record), key: issued.key };
}

/** Revokes one of the catalog's keys (the caller's own included); another catalog's, or a console session, is a 404. */
export async function revokeCatalogKey(em: EntityManager, catalogId: string, keyId: string, actor: Actor): Promise<ApiKeyView> {
  return keyView(await revokeApiKey(em, keyId, actor, { catalogId, kind: 'key' }));
}

/** Sets or clears one of the catalog's keys' address ranges and expiry; another catalog's key, or a console session, is a 404. */
export async function limitCatalogKey(em: EntityManager, catalogId: string, keyId: string, request: KeyLimitsRequest, actor: Actor): Promise<ApiKeyView> {
  const expiresAt = request.expiresAt === undefined || request.expiresAt === null ? request.expiresAt : new Date(request.expiresAt);
  return keyView(await limitApiKey(em, keyId, { allowedCidrs: request.allowedCidrs, expiresAt }, actor, { catalogId, kind: 'key' }));
}
