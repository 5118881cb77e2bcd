// Stock movements: signed quantities applied atomically to an item's on-hand, with stock.adjusted.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { StockMovement, StockReason } from '../../generated/client.ts';
import { newId } from '../../platform/ids.ts';
import { domainEvent, eventRow, writeOutbox } from '../events/outbox.ts';
import { notFound, unprocessable } from '../../platform/errors.ts';
import { decodeCursor, encodeCursor } from '../pagination.ts';
import { isoTime } from '../items/view.ts';


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

// The range of the on_hand column (integer).
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

async function findItem(em: EntityManager, catalogId: string, externalSystem: string, externalId: string) {
  const [item] = await em.execute<Array<{ id: string; track_stock: boolean; on_hand: number }>>(
    'SELECT id, track_stock, on_hand FROM items WHERE catalog_id = ? AND external_system = ? AND external_id = ?',
    [catalogId, externalSystem, externalId],
  );
  if (!item) throw notFound(`Item ${externalSystem}/${externalId}`);
  return item;
}

/**
 * Records a movement. The on-hand update takes the item's row lock, so concurrent movements
 * serialize and each sees the total of those before it: `onHandAfter` is exact.
 */
export async function recordMovement(
  em: EntityManager,
  catalogId: string,
  externalSystem: string,
  externalId: string,
  input: MovementInput,
): Promise<{ movement: MovementView; onHand: number }> {
  return em.transactional(async (tx) => {
    // onHand is a 32-bit integer: a movement that would take it out of range is refused, not overflowed.
    const [item] = await tx.execute<Array<{ id: string; on_hand: number }>>(
      `UPDATE items SET on_hand = on_hand + ?
       WHERE catalog_id = ? AND external_system = ? AND external_id = ? AND track_stock
         AND on_hand::bigint + ? BETWEEN ${INT32_MIN} AND ${INT32_MAX}
       RETURNING id, on_hand`,
      [input.quantity, catalogId, externalSystem, externalId, input.quantity],
    );
    if (!item) {
      const found = await findItem(tx, catalogId, externalSystem, externalId);
      if (!found.track_stock) {
        throw unprocessable(`Item ${externalSystem}/${externalId} does not track stock: upsert it with "trackStock": true first.`);
      }
      throw unprocessable(
        `This movement would take onHand from ${found.on_hand} to ${found.on_hand + input.quantity}, ` +
        `outside the range an onHand can have (${INT32_MIN} to ${INT32_MAX}).`,
      );
    }
    const [row] = await tx.execute<MovementRow[]>(
      `INSERT INTO stock_movements (id, catalog_id, item_id, quantity, reason, reference, occurred_at, on_hand_after)
       VALUES (?, ?, ?, ?, ?, ?, coalesce(?::timestamptz, now()), ?)
       RETURNING id, quantity, reason, reference, ${isoTime('occurred_at')} AS occurred_at, ${isoTime('created_at')} AS created_at, on_hand_after`,
      [newId(), catalogId, item.id, input.quantity, input.reason, input.reference ?? null, input.occurredAt ?? null, item.on_hand],
    );
    const movement = view(row!);
    await writeOutbox((sql, params) => tx.execute(sql, params), [eventRow(domainEvent({
      type: 'stock.adjusted',
      catalogId,
      resourceId: externalId,
      data: {
        externalId, externalSystem, serviceId: item.id, movementId: movement.id,
        quantity: movement.quantity, reason: movement.reason, onHand: item.on_hand,
      },
    }))]);
    return { movement, onHand: item.on_hand };
  });
}

/** Newest first. */
export async function listMovements(
  em: EntityManager,
  catalogId: string,
  externalSystem: string,
  externalId: string,
  page: { limit: number; cursor?: string },
): Promise<{ movements: MovementView[]; nextCursor: string | null }> {
  const item = await findItem(em, catalogId, externalSystem, externalId);
  const params: unknown[] = [item.id];
  let after = '';
  if (page.cursor) {
    const key = decodeCursor(page.cursor);
    after = 'AND (created_at, id) < (?::timestamptz, ?::uuid)';
    params.push(key.at, key.id);
  }
  const rows = await em.execute<Array<MovementRow & { created_at_text: string }>>(
    `SELECT id, quantity, reason, reference, ${isoTime('occurred_at')} AS occurred_at, ${isoTime('created_at')} AS created_at,
       on_hand_after, created_at::text AS created_at_text
     FROM stock_movements WHERE item_id = ? ${after} ORDER BY created_at DESC, id DESC LIMIT ?`,
    [...params, page.limit + 1],
  );
  const more = rows.length > page.limit;
  const pageRows = more ? rows.slice(0, page.limit) : rows;
  const last = pageRows.at(-1);
  return { movements: pageRows.map(view), nextCursor: more && last ? encodeCursor({ at: last.created_at_text, id: last.id }) : null };
}
