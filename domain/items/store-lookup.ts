// The items store, the upsert's lookup: what a batch's write depends on, in one or two statements whatever its size.
import { prepared, query } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { identityKey, nameKey } from './keys.ts';
import type { NormalizedItem } from './normalized-item.ts';
import { ITEM_SELECT } from './view.ts';
import type { ItemRow } from './view.ts';

export interface ExistingItem {
  id: string;
  externalSystem: string;
  externalId: string;
  contentHash: string;
  sku: string | null;
  /** The stored item names media (unknown, false, for an item found only as a SKU's owner). */
  hasMedia: boolean;
}

export interface Lookup {
  /** By identity key (`externalSystem\u0000externalId`). */
  items: Map<string, ExistingItem>;
  /** SKU → owning identity key, for the items of the batch's SKUs. */
  skuOwners: Map<string, string>;
  categories: Map<string, string>;
  brands: Map<string, string>;
  /** The stored items whole, by identity key: filled when the lookup is for one item or asked for. */
  stored: Map<string, ItemRow>;
}

interface LookupRow {
  kind: 'item' | 'category' | 'brand';
  id: string;
  s: string | null;
  e: string | null;
  h: string | null;
  /** The SKU of an item, the name key of a category or brand. */
  k: string | null;
}

// The batch's items by identity, each through the unique index. Rows name their input by
// position, so only the id, hash and SKU come back.
const LOOKUP_ITEMS = prepared(`
    SELECT t.ord, i.id, i.content_hash AS h, i.sku AS k, jsonb_array_length(i.media) > 0 AS m
    FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(s, e, ord)
    CROSS JOIN LATERAL (SELECT i.id, i.content_hash, i.sku, i.media FROM items i
      WHERE i.catalog_id = $1 AND i.external_system = t.s AND i.external_id = t.e LIMIT 1) i`);

// What writing needs besides: the owners of the SKUs, and the categories and brands by name key.
const LOOKUP_NAMES = prepared(`
    SELECT 'item' AS kind, i.id, i.external_system AS s, i.external_id AS e, i.content_hash AS h, i.sku AS k
    FROM unnest($2::text[]) AS x(sku)
    CROSS JOIN LATERAL (SELECT * FROM items i WHERE i.catalog_id = $1 AND i.sku = x.sku LIMIT 1) i
    UNION ALL
    SELECT 'category', c.id, NULL, NULL, NULL, c.name_key
    FROM unnest($3::text[]) AS x(k)
    CROSS JOIN LATERAL (SELECT * FROM categories c WHERE c.catalog_id = $1 AND c.name_key = x.k LIMIT 1) c
    UNION ALL
    SELECT 'brand', b.id, NULL, NULL, NULL, b.name_key
    FROM unnest($4::text[]) AS x(k)
    CROSS JOIN LATERAL (SELECT * FROM brands b WHERE b.catalog_id = $1 AND b.name_key = x.k LIMIT 1) b`);

// The same for one item, with scalar parameters: its generic plan is as good as a custom one, so
// Postgres plans it once per connection (an array's length is unknown to a generic plan, which
// makes Postgres plan the batch form anew on every run). It returns the stored item whole, so
// an unchanged item needs no other statement.
const LOOKUP_ONE = prepared(`
    SELECT v.*, o.id AS owner_id, o.external_system AS owner_s, o.external_id AS owner_e, o.content_hash AS owner_h,
      (SELECT c.id FROM categories c WHERE c.catalog_id = $1 AND c.name_key = $5) AS found_category,
      (SELECT b.id FROM brands b WHERE b.catalog_id = $1 AND b.name_key = $6) AS found_brand
    FROM (SELECT 1) AS one
    LEFT JOIN LATERAL (${ITEM_SELECT} WHERE i.catalog_id = $1 AND i.external_system = $2 AND i.external_id = $3) v ON true
    LEFT JOIN LATERAL (SELECT o.id, o.external_system, o.external_id, o.content_hash FROM items o
      WHERE o.catalog_id = $1 AND o.sku = $4) o ON true`);

// The same for several items in one round trip (single upserts sent together,
// domain/items/single-upserts.ts). An item found with the hash its input has will not be
// written, so its SKU owner, category and brand are not looked up: the condition on the outer
// row alone makes each of those subqueries a one-time filter, skipped before any index probe.
// `LIMIT $8`, the number of items, never cuts a row (one comes back per item). It is there for
// the plan cache: a generic plan counts an array parameter as 10 elements, a custom plan the
// group's real size. Unless a connection's first groups held more than 10, Postgres judged the
// generic plan dearer and planned this statement anew on every run, which took twice as long as
// running it. A limit it cannot see makes it reckon a tenth of the rows, so after its first
// five runs a connection keeps the generic plan: the same nested loop of index probes
// (bench/results/2026-11-25-targets-part-by-part.md).
const LOOKUP_MANY = prepared(`
    SELECT t.ord, v.*, o.id AS owner_id, o.external_system AS owner_s, o.external_id AS owner_e, o.content_hash AS owner_h,
      (SELECT c.id FROM categories c WHERE v.content_hash IS DISTINCT FROM t.h AND c.catalog_id = $1 AND c.name_key = t.ck) AS found_category,
      (SELECT b.id FROM brands b WHERE v.content_hash IS DISTINCT FROM t.h AND b.catalog_id = $1 AND b.name_key = t.bk) AS found_brand
    FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) WITH ORDINALITY AS t(s, e, h, sku, ck, bk, ord)
    LEFT JOIN LATERAL (${ITEM_SELECT} WHERE i.catalog_id = $1 AND i.external_system = t.s AND i.external_id = t.e LIMIT 1) v ON true
    LEFT JOIN LATERAL (SELECT o.id, o.external_system, o.external_id, o.content_hash FROM items o
      WHERE v.content_hash IS DISTINCT FROM t.h AND o.catalog_id = $1 AND o.sku = t.sku LIMIT 1) o ON true
    LIMIT $8`);

type LookupOneRow = Partial<ItemRow> & {
  owner_id: string | null;
  owner_s: string | null;
  owner_e: string | null;
  owner_h: string | null;
  found_category: string | null;
  found_brand: string | null;
};

/** Adds what LOOKUP_ONE or LOOKUP_MANY found for `item` to `result`. */
function addFound(result: Lookup, item: NormalizedItem, row: LookupOneRow): void {
  if (row.id) {
    const key = identityKey(row.external_system!, row.external_id!);
    result.items.set(key, {
      id: row.id, externalSystem: row.external_system!, externalId: row.external_id!, contentHash: row.content_hash!, sku: row.sku ?? null,
      hasMedia: (row.media?.length ?? 0) > 0,
    });
    result.stored.set(key, row as ItemRow);
    if (row.sku) result.skuOwners.set(row.sku, key);
  }
  if (row.owner_id) {
    const key = identityKey(row.owner_s!, row.owner_e!);
    result.items.set(key, {
      id: row.owner_id, externalSystem: row.owner_s!, externalId: row.owner_e!, contentHash: row.owner_h!, sku: item.sku,
      hasMedia: result.items.get(key)?.hasMedia ?? false,
    });
    result.skuOwners.set(item.sku!, key);
  }
  if (row.found_category) result.categories.set(nameKey(item.category!.name), row.found_category);
  if (row.found_brand) result.brands.set(nameKey(item.brand!.name), row.found_brand);
}

/**
 * The batch's existing items (by identity or SKU), categories and brands, as plain rows. Each
 * part looks its keys up one by one through a unique index (a LATERAL subquery with LIMIT 1 is
 * never turned into a hash join), so the cost follows the batch, never the catalog, whatever the
 * planner's statistics say about the catalog's size. SKUs, categories and brands are looked up
 * only for the items the first query did not find unchanged: a batch that changes nothing (a
 * re-import of the same file) costs one query of one probe per item. With `stored` (callers that
 * answer with the stored items) the lookup is one query whatever the outcomes, returning the
 * items whole.
 */
export async function lookup(db: Db, catalogId: string, items: readonly NormalizedItem[], stored = false): Promise<Lookup> {
  const result: Lookup = { items: new Map(), skuOwners: new Map(), categories: new Map(), brands: new Map(), stored: new Map() };
  const nameKeyOf = (named: { name: string } | null) => (named ? nameKey(named.name) : null);
  if (items.length === 1) {
    const item = items[0]!;
    const [row] = await query<LookupOneRow>(db, 'items.lookup_one', LOOKUP_ONE,
      [catalogId, item.externalSystem, item.externalId, item.sku, nameKeyOf(item.category), nameKeyOf(item.brand)]);
    if (row) addFound(result, item, row);
    return result;
  }
  if (stored) {
    const column = (pick: (item: NormalizedItem) => string | null) => items.map(pick);
    const rows = await query<LookupOneRow & { ord: string }>(db, 'items.lookup_many', LOOKUP_MANY, [catalogId, column((i) => i.externalSystem),
      column((i) => i.externalId), column((i) => i.contentHash), column((i) => i.sku), column((i) => nameKeyOf(i.category)),
      column((i) => nameKeyOf(i.brand)), items.length]);
    for (const row of rows) addFound(result, items[Number(row.ord) - 1]!, row);
    return result;
  }
  const found = await query<{ ord: string; id: string; h: string; k: string | null; m: boolean }>(db, 'items.lookup_items', LOOKUP_ITEMS,
    [catalogId, items.map((i) => i.externalSystem), items.map((i) => i.externalId)]);
  const unchanged = new Set<NormalizedItem>();
  for (const row of found) {
    const item = items[Number(row.ord) - 1]!;
    const key = identityKey(item.externalSystem, item.externalId);
    result.items.set(key, { id: row.id, externalSystem: item.externalSystem, externalId: item.externalId, contentHash: row.h, sku: row.k, hasMedia: row.m });
    if (row.k !== null) result.skuOwners.set(row.k, key);
    if (row.h === item.contentHash) unchanged.add(item);
  }
  const writing = items.filter((i) => !unchanged.has(i));
  if (writing.length === 0) return result;
  const skus = [...new Set(writing.flatMap((i) => (i.sku === null ? [] : [i.sku])))];
  const names = (named: 'category' | 'brand') => [...new Set(writing.flatMap((i) => (i[named] ? [nameKey(i[named].name)] : [])))];
  const rows = await query<LookupRow>(db, 'items.lookup_names', LOOKUP_NAMES, [catalogId, skus, names('category'), names('brand')]);
  for (const row of rows) {
    if (row.kind === 'category') result.categories.set(row.k!, row.id);
    else if (row.kind === 'brand') result.brands.set(row.k!, row.id);
    else {
      const key = identityKey(row.s!, row.e!);
      result.items.set(key, { id: row.id, externalSystem: row.s!, externalId: row.e!, contentHash: row.h!, sku: row.k, hasMedia: result.items.get(key)?.hasMedia ?? false });
      if (row.k !== null) result.skuOwners.set(row.k, key);
    }
  }
  return result;
}
