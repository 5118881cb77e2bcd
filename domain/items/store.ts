// The items store: every statement on items, categories and brands; reads, deletes, stock and fingerprints here, the upsert's lookup and write beside it.
import { prepared, query, sql, streamQuery } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { afterCursor, encodeCursor, keysetPage } from '../pagination.ts';
import { identityKey } from './keys.ts';
import { ITEM_SELECT, itemJson } from './view.ts';
import type { ItemRow } from './view.ts';

// The upsert's statements, in files of their own: the lookup (store-lookup.ts) and the write (store-write.ts).
export { lookup } from './store-lookup.ts';
export type { ExistingItem, Lookup } from './store-lookup.ts';
export { writeInput, writeItems, writeItemsWithBatchRecord } from './store-write.ts';
export type { Names, NewName, StoredRow, WriteCandidate, WriteInput, BatchRecord, WrittenRow } from './store-write.ts';

const SELECT = sql.raw(ITEM_SELECT);

const GET_ITEM = prepared(`${ITEM_SELECT} WHERE i.catalog_id = $1 AND i.external_system = $2 AND i.external_id = $3`);

/** The item with this identity in the catalog. */
export async function itemRow(db: Db, catalogId: string, externalSystem: string, externalId: string): Promise<ItemRow | undefined> {
  const [row] = await query<ItemRow>(db, 'items.get', GET_ITEM, [catalogId, externalSystem, externalId]);
  return row;
}

/** Conditions of a list of items, normalized as stored. */
export interface ItemConditions {
  readonly updatedSince?: string | undefined;
  readonly sku?: string | undefined;
  readonly categoryKey?: string | undefined;
  readonly brandKey?: string | undefined;
  readonly tag?: string | undefined;
  /** Items naming this image. */
  readonly sourceUrlHash?: string | undefined;
}

const conditionsOf = (catalogId: string, where: ItemConditions) => [
  sql`i.catalog_id = ${catalogId}::uuid`,
  ...where.updatedSince === undefined ? [] : [sql`i.updated_at >= ${where.updatedSince}::timestamptz`],
  ...where.sku === undefined ? [] : [sql`i.sku = ${where.sku}`],
  ...where.categoryKey === undefined ? [] : [sql`c.name_key = ${where.categoryKey}`],
  ...where.brandKey === undefined ? [] : [sql`b.name_key = ${where.brandKey}`],
  ...where.tag === undefined ? [] : [sql`i.tags @> ARRAY[${where.tag}]::text[]`],
  // Through items_media_idx (jsonb_path_ops containment), as the asset's own reads.
  ...where.sourceUrlHash === undefined ? [] : [sql`jsonb_array_length(i.media) > 0 AND i.media @> jsonb_build_array(jsonb_build_object('sourceUrlHash', ${where.sourceUrlHash}::text))`],
];

/** A page of the catalog's items in update order (updated_at, id), after `cursor`. */
export async function listItemRows(db: Db, catalogId: string, where: ItemConditions, page: { limit: number; cursor?: string | undefined }) {
  const conditions = conditionsOf(catalogId, where);
  // The last row's exact (updated_at, id): pages never skip or repeat a row.
  if (page.cursor) conditions.push(afterCursor(page.cursor, sql`i.updated_at, i.id`, 'asc'));
  const rows = await query<ItemRow>(db, 'items.list',
    sql`${SELECT} WHERE ${sql.join(conditions, sql` AND `)} ORDER BY i.updated_at, i.id LIMIT ${page.limit + 1}`);
  return keysetPage(rows, page.limit, (row) => encodeCursor({ at: row.updated_at_text, id: row.id }));
}

/** Rows fetched per round trip while exporting: memory stays flat whatever the catalog's size. */
const EXPORT_CHUNK = 500;

/** Every item of the catalog (updated since `updatedSince`) by identity, streamed through a server-side cursor. */
export function streamItemRows(db: Db, catalogId: string, updatedSince?: string): AsyncGenerator<ItemRow> {
  const conditions = conditionsOf(catalogId, { updatedSince });
  return streamQuery<ItemRow>(db,
    sql`${SELECT} WHERE ${sql.join(conditions, sql` AND `)} ORDER BY i.external_system, i.external_id`, EXPORT_CHUNK);
}

const DELETED_ITEM = sql.raw(itemJson('c.name', 'b.name'));

/** Deletes the item; what it was (the item as GET answered it, as JSON text), or undefined when the catalog has no such item. */
export async function deleteItemRow(db: Db, catalogId: string, externalSystem: string, externalId: string): Promise<{ item: string; id: string; version: number; content_hash: string } | undefined> {
  // The record is read from the row the DELETE removes (media_assets, categories and brands
  // stay), so it is the state the delete ended, whatever wrote just before.
  const [row] = await query<{ item: string; id: string; version: number; content_hash: string }>(db, 'items.delete', sql`
    WITH i AS (DELETE FROM items WHERE catalog_id = ${catalogId}::uuid AND external_system = ${externalSystem}
                 AND external_id = ${externalId} RETURNING *)
    SELECT ${DELETED_ITEM} AS item, i.id, i.version, i.content_hash FROM i LEFT JOIN categories c ON c.id = i.category_id LEFT JOIN brands b ON b.id = i.brand_id`);
  return row;
}

// Import lines already stored: the item, if any, whose last write came from a line with this
// fingerprint. At most one item can carry a fingerprint (a line names one identity).
const BY_FINGERPRINT = prepared(`
    SELECT t.ord, i.id, i.external_system AS s, i.external_id AS e, i.content_hash AS h
    FROM unnest($2::text[]) WITH ORDINALITY AS t(f, ord)
    CROSS JOIN LATERAL (SELECT i.id, i.external_system, i.external_id, i.content_hash FROM items i
      WHERE i.catalog_id = $1 AND i.import_fingerprint = decode(t.f, 'hex') LIMIT 1) i`);

/** An item found by the fingerprint of the line that last wrote it. */
export interface FingerprintedItem {
  /** identityKey(externalSystem, externalId). */
  readonly key: string;
  readonly id: string;
  readonly contentHash: string;
}

/**
 * Of `fingerprints` (hex; undefined for a line without one), those an item of the catalog
 * carries: by position, that item. Such a line is exactly the one that last wrote its item, so
 * upserting it again would find it unchanged.
 */
export async function itemsByFingerprint(db: Db, catalogId: string, fingerprints: ReadonlyArray<string | undefined>): Promise<Map<number, FingerprintedItem>> {
  const rows = await query<{ ord: string; id: string; s: string; e: string; h: string }>(db, 'items.by_fingerprint', BY_FINGERPRINT, [catalogId, fingerprints.map((f) => f ?? null)]);
  return new Map(rows.map((row) => [Number(row.ord) - 1, { key: identityKey(row.s, row.e), id: row.id, contentHash: row.h }]));
}

// The range of the on_hand column (integer).
export const ON_HAND_MIN = -2147483648;
export const ON_HAND_MAX = 2147483647;

/** An item's stock: whether it tracks it, and its on-hand. */
export interface ItemStock {
  readonly id: string;
  readonly trackStock: boolean;
  readonly onHand: number;
}

/** The item's stock, or undefined when the catalog has no item with this identity. */
export async function itemStock(db: Db, catalogId: string, externalSystem: string, externalId: string): Promise<ItemStock | undefined> {
  const [row] = await query<{ id: string; track_stock: boolean; on_hand: number }>(db, 'items.stock',
    'SELECT id, track_stock, on_hand FROM items WHERE catalog_id = $1 AND external_system = $2 AND external_id = $3',
    [catalogId, externalSystem, externalId]);
  return row && { id: row.id, trackStock: row.track_stock, onHand: row.on_hand };
}

/**
 * Adds `quantity` to a stock-tracking item's on-hand and answers the new one; undefined (nothing
 * changed) when the item does not exist, does not track stock, or the sum would leave the
 * column's range. The update takes the item's row lock until the caller's transaction ends, so
 * concurrent adjustments take turns and each sees the total of those before it.
 */
export async function adjustOnHand(db: Db, catalogId: string, externalSystem: string, externalId: string, quantity: number): Promise<{ id: string; sku: string | null; onHand: number } | undefined> {
  const [row] = await query<{ id: string; sku: string | null; on_hand: number }>(db, 'items.adjust_on_hand',
    `UPDATE items SET on_hand = on_hand + $1, version = version + 1
     WHERE catalog_id = $2 AND external_system = $3 AND external_id = $4 AND track_stock
       AND on_hand::bigint + $1 BETWEEN ${ON_HAND_MIN} AND ${ON_HAND_MAX}
     RETURNING id, sku, on_hand`,
    [quantity, catalogId, externalSystem, externalId]);
  return row && { id: row.id, sku: row.sku, onHand: row.on_hand };
}
