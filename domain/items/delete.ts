// Deleting an item: destructive, emits item.deleted in the same transaction.
import type { Db } from '../../platform/db/sql.ts';
import { notFound } from '../../platform/errors.ts';
import { domainEvent, eventRow, itemEventKey, writeOutbox } from '../events/outbox.ts';
import { deleteItemRow } from './store.ts';

export interface DeletedItem {
  externalSystem: string;
  externalId: string;
  serviceId: string;
}

export async function deleteItem(db: Db, catalogId: string, externalSystem: string, externalId: string): Promise<DeletedItem> {
  return db.transactional(async (tx) => {
    const row = await deleteItemRow(tx, catalogId, externalSystem, externalId);
    if (!row) throw notFound(`Item ${externalSystem}/${externalId}`);
    await writeOutbox(tx, [eventRow(domainEvent({
      type: 'item.deleted',
      catalogId,
      resourceId: externalId,
      data: { externalId, externalSystem, serviceId: row.id, sku: row.sku },
    }), itemEventKey(catalogId, externalSystem, externalId))]);
    return { externalSystem, externalId, serviceId: row.id };
  });
}
