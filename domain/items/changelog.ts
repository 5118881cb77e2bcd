// The item changelog (catalog.items.v1): each item's state as GET answers it, published from its item events' outbox rows, or appended for changes another event reports.
import { sql } from '../../platform/db/sql.ts';
import type { Db, SqlFragment } from '../../platform/db/sql.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { appendRows, catalogOfItemKey, itemEventKeySql } from '../events/outbox.ts';
import type { OutboxRecord } from '../events/outbox.ts';
import { itemJson } from './view.ts';

/** The changelog's key of an item (its identity, as its events are keyed) in SQL, over an items row `i`. */
export const ITEM_KEY = sql.raw(itemEventKeySql('i.catalog_id::text', 'i.external_system', 'i.external_id'));
/**
 * An item's changelog record (ItemRecord in asyncapi.yaml: the item with its catalogId first), as
 * JSON text, over an items row `i` joined to `categories c` and `brands b`.
 */
const RECORD = sql.raw(`concat('{"catalogId":"', i.catalog_id, '",', substr(${itemJson('c.name', 'b.name')}, 2))`);

/** An item whose record was appended, and the event it goes with. */
export interface RecordedItem {
  readonly externalSystem: string;
  readonly externalId: string;
  readonly eventId: string;
}

/**
 * Appends the current record of each item `from … where` yields to the changelog, in the
 * caller's transaction: `from` is a FROM list naming the items `i` (with whatever else it
 * needs), and `eventId` and `eventType` SQL expressions over it: the id and type of the event
 * that reports the change, which the record carries as its `event-id` and `event-type` headers.
 * Returns the items recorded.
 */
export async function appendItemRecords(db: Db, selection: { from: SqlFragment; where?: SqlFragment; eventId: SqlFragment; eventType: SqlFragment }): Promise<RecordedItem[]> {
  const { from, where = sql`true`, eventId, eventType } = selection;
  const rows = await appendRows(db, sql`
    SELECT ${eventId}, ${TOPICS.items}::text, ${ITEM_KEY}, ${RECORD}, ${eventType}::text
      FROM ${from}
      LEFT JOIN categories c ON c.id = i.category_id
      LEFT JOIN brands b ON b.id = i.brand_id
     WHERE ${where}`);
  return rows.map((row) => {
    const [, externalSystem, externalId] = JSON.parse(row.key) as [string, string, string];
    return { externalSystem, externalId, eventId: row.eventId };
  });
}

const DATA = ',"data":';
const UPDATE_EXTRAS = ',"previousContentHash":"';
const ITEM_START = '{"serviceId":';

/**
 * The item changelog's record (catalog.items.v1) that an item event's outbox row stands for too:
 * for item.created or item.updated the item the event carries, with the event's catalogId put
 * first (ItemRecord), cut from the event's own bytes (its `data`, without item.updated's
 * previousContentHash, changedFields and previousAttributes), and for item.deleted a tombstone (null); undefined for
 * any other row. The cut relies on the layout the events are written in (store-write.ts,
 * domainEvent): `data` last in the envelope, the update's own fields last in `data`. Neither
 * marker can occur earlier unescaped: in JSON text every `"` inside a string is escaped, and
 * jsonb prints `metadata`'s keys with a space after the colon.
 */
export function itemRecordOf(record: OutboxRecord): { value: string | null } | undefined {
  // Only rows keyed by the item's identity (itemEventKey): an event written before events were
  // keyed so, still unsent at an upgrade, has no key the changelog could use.
  if (record.catalog_id === null || !record.key.startsWith('[')) return undefined;
  const { type } = record;
  if (type === 'item.deleted') return { value: null };
  if (type !== 'item.created' && type !== 'item.updated') return undefined;
  const start = record.payload.indexOf(DATA) + DATA.length;
  const end = type === 'item.created' ? record.payload.length - 1 : record.payload.lastIndexOf(UPDATE_EXTRAS);
  // An event written before events carried the item (the upgrade's backlog) has none to give:
  // migration 0010 wrote every item's record after it.
  if (!record.payload.startsWith(ITEM_START, start) || end < start) return undefined;
  const fields = record.payload.slice(start + 1, end);
  return { value: `{"catalogId":"${record.catalog_id}",${fields}${type === 'item.created' ? '' : '}'}` };
}

const CATALOG_FIRST = '{"catalogId":';

/**
 * A changelog record as it is published. Those migration 0010 wrote, for the items that existed
 * at the upgrade, have neither the catalogId in their value nor an event type: they get the
 * catalog their key begins with and `item.updated`, as asyncapi.yaml says (no event reports them;
 * their event-id is one no event has). Every other record is published as it was written.
 */
export function publishedItemRecord(record: OutboxRecord): OutboxRecord {
  if (record.topic !== TOPICS.items || record.type !== null || record.payload.startsWith(CATALOG_FIRST)) return record;
  return { ...record, type: 'item.updated', payload: `${CATALOG_FIRST}"${catalogOfItemKey(record.key)}",${record.payload.slice(1)}` };
}
