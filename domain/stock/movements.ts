// The stock store: movements (signed quantities), each applied to its item's on-hand (through the items store) with stock.adjusted.
import type { StockMovement, StockReason } from '../../generated/client.ts';
import { query, sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { notFound, unprocessable } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { domainEvent, eventRow, itemEventKey, writeOutbox } from '../events/outbox.ts';
import { appendItemRecords } from '../items/changelog.ts';
import { adjustOnHand, itemStock, ON_HAND_MAX, ON_HAND_MIN } from '../items/store.ts';
import type { ItemStock } from '../items/store.ts';
import { isoTime } from '../items/view.ts';
import type { VersionSource } from '../items/version-source.ts';
import { recordStockVersion } from '../items/versions.ts';
import { afterCursor, encodeCursor, keysetPage } from '../pagination.ts';
import { lockNamedAssets } from '../media/asset-store.ts';

export interface MovementInput {
  quantity: number;
  reason: StockReason;
  reference?: string | null;
  occurredAt?: string;
}

export type MovementView = StockMovement;

interface MovementRow {
  id: string;
  quantity: number;
  reason: StockReason;
  reference: string | null;
  occurred_at: string;
  created_at: string;
  on_hand_after: number;
}

const view = (row: MovementRow): MovementView => ({
  id: row.id,
  quantity: row.quantity,
  reason: row.reason,
  reference: row.reference,
  occurredAt: row.occurred_at,
  createdAt: row.created_at,
  onHandAfter: row.on_hand_after,
});

async function findItem(db: Db, catalogId: string, externalSystem: string, externalId: string): Promise<ItemStock> {
  const item = await itemStock(db, catalogId, externalSystem, externalId);
  if (!item) throw notFound(`Item ${externalSystem}/${externalId}`);
  return item;
}

/**
 * Records a movement. The on-hand update takes the item's row lock, so concurrent movements
 * serialize and each sees the total of those before it: `onHandAfter` is exact.
 */
export async function recordMovement(
  db: Db,
  catalogId: string,
  externalSystem: string,
  externalId: string,
  input: MovementInput,
  source: VersionSource,
): Promise<{ movement: MovementView; onHand: number }> {
  return db.transactional(async (tx) => {
    // onHand is a 32-bit integer: a movement that would take it out of range is refused, not overflowed.
    const item = await adjustOnHand(tx, catalogId, externalSystem, externalId, input.quantity);
    if (!item) {
      const found = await findItem(tx, catalogId, externalSystem, externalId);
      if (!found.trackStock) {
        throw unprocessable(`Item ${externalSystem}/${externalId} does not track stock: upsert it with "trackStock": true first.`);
      }
      throw unprocessable(
        `This movement would take onHand from ${found.onHand} to ${found.onHand + input.quantity}, ` +
        `outside the range an onHand can have (${ON_HAND_MIN} to ${ON_HAND_MAX}).`,
      );
    }
    const [row] = await query<MovementRow>(tx, 'stock.record_movement',
      `INSERT INTO stock_movements (id, catalog_id, item_id, quantity, reason, reference, occurred_at, on_hand_after)
       VALUES ($1, $2, $3, $4, $5, $6, coalesce($7::timestamptz, now()), $8)
       RETURNING id, quantity, reason, reference, ${isoTime('occurred_at')} AS occurred_at, ${isoTime('created_at')} AS created_at, on_hand_after`,
      [newId(), catalogId, item.id, input.quantity, input.reason, input.reference ?? null, input.occurredAt ?? null, item.onHand],
    );
    const movement = view(row!);
    // The changelog record below carries the item's images as their state changes last committed them.
    await lockNamedAssets(tx, catalogId, [], [[externalSystem, externalId]]);
    const event = domainEvent({
      type: 'stock.adjusted',
      catalogId,
      resourceId: externalId,
      data: {
        externalId, externalSystem, serviceId: item.id, sku: item.sku, movementId: movement.id, quantity: movement.quantity,
        reason: movement.reason, reference: movement.reference, occurredAt: movement.occurredAt, onHand: item.onHand,
      },
    });
    await writeOutbox(tx, [eventRow(event, itemEventKey(catalogId, externalSystem, externalId))]);
    // The item's changelog record, with its new onHand.
    await appendItemRecords(tx, { from: sql`items i`, where: sql`i.id = ${item.id}::uuid`, eventId: sql`${event.id}::uuid`, eventType: sql`${event.type}` });
    await recordStockVersion(tx, item.id, item.onHand - movement.quantity, source, event.id);
    return { movement, onHand: item.onHand };
  });
}

/** Newest first. */
export async function listMovements(
  db: Db,
  catalogId: string,
  externalSystem: string,
  externalId: string,
  page: { limit: number; cursor?: string },
): Promise<{ movements: MovementView[]; nextCursor: string | null }> {
  const item = await findItem(db, catalogId, externalSystem, externalId);
  const after = page.cursor ? sql`AND ${afterCursor(page.cursor, sql`created_at, id`, 'desc')}` : sql``;
  const rows = await query<MovementRow & { created_at_text: string }>(db, 'stock.list_movements', sql`
    SELECT id, quantity, reason, reference, ${sql.raw(isoTime('occurred_at'))} AS occurred_at,
      ${sql.raw(isoTime('created_at'))} AS created_at, on_hand_after, created_at::text AS created_at_text
    FROM stock_movements WHERE item_id = ${item.id} ${after} ORDER BY created_at DESC, id DESC LIMIT ${page.limit + 1}`);
  const cut = keysetPage(rows, page.limit, (last) => encodeCursor({ at: last.created_at_text, id: last.id }));
  return { movements: cut.rows.map(view), nextCursor: cut.nextCursor };
}
