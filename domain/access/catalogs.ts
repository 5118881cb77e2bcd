// Catalogs: the tenants. Every API key, item, job and webhook belongs to exactly one.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../../platform/actor.ts';
import { Catalog } from '../../platform/db/entities/catalogs.ts';
import { isId, newId } from '../../platform/ids.ts';
import { conflict, notFound, validationError } from '../../platform/errors.ts';
import { recordAudit } from '../audit/audit-log.ts';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export async function createCatalog(em: EntityManager, input: { name: string; ownerEmail: string }, actor: Actor): Promise<Catalog> {
  const name = input.name.trim();
  const details = [];
  if (name.length < 1 || name.length > 200) details.push({ path: 'name', message: 'must be 1 to 200 characters' });
  if (!EMAIL.test(input.ownerEmail)) details.push({ path: 'ownerEmail', message: 'must be an e-mail address' });
  if (details.length > 0) throw validationError(details);
  if (await em.findOne(Catalog, { name })) throw conflict(`A catalog named "${name}" already exists.`);
  return em.transactional(async (tx) => {
    const catalog = tx.create(Catalog, { id: newId(), name, ownerEmail: input.ownerEmail.trim(), createdAt: new Date() });
    await tx.flush();
    await recordAudit(tx, actor, {
      catalogId: catalog.id, action: 'catalog.created', resourceType: 'catalog', resourceId: catalog.id,
      before: null, after: { id: catalog.id, name: catalog.name, ownerEmail: catalog.ownerEmail },
    });
    return catalog;
  });
}

/** Finds a catalog by its id or, failing that, by its exact name. */
export async function findCatalog(em: EntityManager, nameOrId: string): Promise<Catalog> {
  const catalog = isId(nameOrId)
    ? await em.findOne(Catalog, { id: nameOrId.toLowerCase() })
    : await em.findOne(Catalog, { name: nameOrId.trim() });
  if (!catalog) throw notFound(`Catalog "${nameOrId}"`);
  return catalog;
}
