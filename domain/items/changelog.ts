// The item changelog (catalog.items.v1) for changes no item event carries: each item's state as GET answers it, appended to the outbox in the transaction that changes it.
import { query, sql } from '../../platform/db/sql.ts';
import type { Db, SqlFragment } from '../../platform/db/sql.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { OUTBOX_CHANNEL, itemEventKeySql } from '../events/outbox.ts';
import { itemJson } from './view.ts';

/**
 * The changelog's key of an item (its identity, as its events are keyed) in SQL, and its record
 * as JSON text, over an items row `i` joined to `categories c` and `brands b`.
 */
const KEY = sql.raw(itemEventKeySql('i.catalog_id::text', 'i.external_system', 'i.external_id'));
const RECORD = sql.raw(itemJson('c.name', 'b.name'));

/** An item whose record was appended, and the event it goes with. */
export interface RecordedItem {
  readonly externalSystem: string;
  readonly externalId: string;
  readonly eventId: string;
}

/**
 * Appends the current record of each item `from … where` yields to the changelog, in the
 * caller's transaction: `from` is a FROM list naming the items `i` (with whatever else it
 * needs), and `eventId` a SQL expression over it: the id of the event that reports the change,
 * which the record carries as its `event-id` header. Returns the items recorded.
 */
export async function appendItemRecords(db: Db, selection: { from: SqlFragment; where: SqlFragment; eventId: SqlFragment }): Promise<RecordedItem[]> {
  const { from, where, eventId } = selection;
  const rows = await query<{ key: string; event_id: string }>(db, sql`
    WITH recorded AS (
      INSERT INTO outbox (event_id, topic, key, payload)
      SELECT ${eventId}, ${TOPICS.items}::text, ${KEY}, ${RECORD}
        FROM ${from}
        LEFT JOIN categories c ON c.id = i.category_id
        LEFT JOIN brands b ON b.id = i.brand_id
       WHERE ${where}
      RETURNING key, event_id
    ), notified AS (
      SELECT pg_notify(${OUTBOX_CHANNEL}::text, '') FROM (SELECT 1 FROM recorded LIMIT 1) AS any_record
    )
    SELECT key, event_id FROM recorded, (SELECT count(*) FROM notified) AS n`);
  return rows.map((row) => {
    const [, externalSystem, externalId] = JSON.parse(row.key) as [string, string, string];
    return { externalSystem, externalId, eventId: row.event_id };
  });
}
