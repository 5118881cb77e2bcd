// Deleting an item: destructive, emits item.deleted in the same transaction.
import type { EntityManager } from '@mikro-orm/postgresql';
import { domainEvent, eventRow, writeOutbox } from '../events/outbox.ts';
import { notFound } from '../../platform/errors.ts';

export interface DeletedItem {
  externalSystem: string;
  externalId: string;
  serviceId: string;
}

export async function deleteItem(em: EntityManager, catalogId: string, externalSystem: string, externalId: string): Promise<DeletedItem> {
  return em.transactional(async (tx) => {
    const [row] = await tx.execute<Array<{ id: string; sku: string | null }>>(
      'DELETE FROM items WHERE catalog_id = ? AND external_system = ? AND external_id = ? RETURNING id, sku',
      [catalogId, externalSystem, externalId],
    );
    if (!row) throw notFound(`Item ${externalSystem}/${externalId}`);
    await writeOutbox((sql, params) => tx.execute(sql, params), [eventRow(domainEvent({
      type: 'item.deleted',
      catalogId,
      resourceId: externalId,
      data: { externalId, externalSystem, serviceId: row.id, sku: row.sku },
    }))]);
    return { externalSystem, externalId, serviceId: row.id };
  });
}
