// Deleting an item: destructive, emits item.deleted with the item as it was (and so its changelog tombstone) and records its version, in the same transaction.
import type { Item } from '../../generated/client.ts';
import type { Db } from '../../platform/db/sql.ts';
import { notFound } from '../../platform/errors.ts';
import { domainEvent, eventRow, itemEventKey, writeOutbox } from '../events/outbox.ts';
import { lockNamedAssets } from '../media/asset-store.ts';
import { deleteItemRow } from './store.ts';
import type { VersionSource } from './version-source.ts';
import { recordDeleteVersion } from './versions.ts';

export interface DeletedItem {
  externalSystem: string;
  externalId: string;
  serviceId: string;
}

export async function deleteItem(db: Db, catalogId: string, externalSystem: string, externalId: string, source: VersionSource): Promise<DeletedItem> {
  return db.transactional(async (tx) => {
    // A change of an image it names, in flight, would otherwise record the item after its tombstone.
    await lockNamedAssets(tx, catalogId, [], [[externalSystem, externalId]]);
    const row = await deleteItemRow(tx, catalogId, externalSystem, externalId);
    if (!row) throw notFound(`Item ${externalSystem}/${externalId}`);
    const item = JSON.parse(row.item) as Item;
    const event = domainEvent({ type: 'item.deleted', catalogId, resourceId: externalId, data: item });
    // The relay also publishes the item's tombstone to the changelog (itemRecordOf).
    await writeOutbox(tx, [eventRow(event, itemEventKey(catalogId, externalSystem, externalId))]);
    await recordDeleteVersion(tx, catalogId, externalSystem, externalId, { id: row.id, version: row.version, contentHash: row.content_hash, item: row.item }, source, event.id);
    return { externalSystem, externalId, serviceId: item.serviceId };
  });
}
