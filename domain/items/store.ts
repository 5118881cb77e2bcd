// The SQL of the upsert path: one lookup and one write per batch, whatever its size.
import type { EntityManager } from '@mikro-orm/postgresql';
import { prepared, query } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { OUTBOX_CHANNEL } from '../events/outbox.ts';
import type { NormalizedItem } from './payload.ts';
import { ITEM_SELECT, itemColumns } from './view.ts';
import type { ItemRow } from './view.ts';

export interface ExistingItem {
  id: string;
  externalSystem: string;
  externalId: string;
  contentHash: string;
  sku: string | null;
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

export const identityKey = (externalSystem: string, externalId: string) => `${externalSystem}\u0000${externalId}`;
/** Categories and brands match per catalog on the trimmed name, case-insensitively (DESIGN §4). */
export const nameKey = (name: string) => name.toLowerCase();

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
    SELECT t.ord, i.id, i.content_hash AS h, i.sku AS k
    FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(s, e, ord)
    CROSS JOIN LATERAL (SELECT i.id, i.content_hash, i.sku FROM items i
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
const LOOKUP_MANY = prepared(`
    SELECT t.ord, v.*, o.id AS owner_id, o.external_system AS owner_s, o.external_id AS owner_e, o.content_hash AS owner_h,
      (SELECT c.id FROM categories c WHERE v.content_hash IS DISTINCT FROM t.h AND c.catalog_id = $1 AND c.name_key = t.ck) AS found_category,
      (SELECT b.id FROM brands b WHERE v.content_hash IS DISTINCT FROM t.h AND b.catalog_id = $1 AND b.name_key = t.bk) AS found_brand
    FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) WITH ORDINALITY AS t(s, e, h, sku, ck, bk, ord)
    LEFT JOIN LATERAL (${ITEM_SELECT} WHERE i.catalog_id = $1 AND i.external_system = t.s AND i.external_id = t.e LIMIT 1) v ON true
    LEFT JOIN LATERAL (SELECT o.id, o.external_system, o.external_id, o.content_hash FROM items o
      WHERE v.content_hash IS DISTINCT FROM t.h AND o.catalog_id = $1 AND o.sku = t.sku LIMIT 1) o ON true`);

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
    result.items.set(key, { id: row.id, externalSystem: row.external_system!, externalId: row.external_id!, contentHash: row.content_hash!, sku: row.sku ?? null });
    result.stored.set(key, row as ItemRow);
    if (row.sku) result.skuOwners.set(row.sku, key);
  }
  if (row.owner_id) {
    const key = identityKey(row.owner_s!, row.owner_e!);
    result.items.set(key, { id: row.owner_id, externalSystem: row.owner_s!, externalId: row.owner_e!, contentHash: row.owner_h!, sku: item.sku });
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
export async function lookup(em: EntityManager, catalogId: string, items: readonly NormalizedItem[], stored = false): Promise<Lookup> {
  const result: Lookup = { items: new Map(), skuOwners: new Map(), categories: new Map(), brands: new Map(), stored: new Map() };
  const nameKeyOf = (named: { name: string } | null) => (named ? nameKey(named.name) : null);
  if (items.length === 1) {
    const item = items[0]!;
    const [row] = await query<LookupOneRow>(em, LOOKUP_ONE,
      [catalogId, item.externalSystem, item.externalId, item.sku, nameKeyOf(item.category), nameKeyOf(item.brand)]);
    if (row) addFound(result, item, row);
    return result;
  }
  if (stored) {
    const column = (pick: (item: NormalizedItem) => string | null) => items.map(pick);
    const rows = await query<LookupOneRow & { ord: string }>(em, LOOKUP_MANY, [catalogId, column((i) => i.externalSystem),
      column((i) => i.externalId), column((i) => i.contentHash), column((i) => i.sku), column((i) => nameKeyOf(i.category)),
      column((i) => nameKeyOf(i.brand))]);
    for (const row of rows) addFound(result, items[Number(row.ord) - 1]!, row);
    return result;
  }
  const found = await query<{ ord: string; id: string; h: string; k: string | null }>(em, LOOKUP_ITEMS,
    [catalogId, items.map((i) => i.externalSystem), items.map((i) => i.externalId)]);
  const unchanged = new Set<NormalizedItem>();
  for (const row of found) {
    const item = items[Number(row.ord) - 1]!;
    const key = identityKey(item.externalSystem, item.externalId);
    result.items.set(key, { id: row.id, externalSystem: item.externalSystem, externalId: item.externalId, contentHash: row.h, sku: row.k });
    if (row.k !== null) result.skuOwners.set(row.k, key);
    if (row.h === item.contentHash) unchanged.add(item);
  }
  const writing = items.filter((i) => !unchanged.has(i));
  if (writing.length === 0) return result;
  const skus = [...new Set(writing.flatMap((i) => (i.sku === null ? [] : [i.sku])))];
  const names = (named: 'category' | 'brand') => [...new Set(writing.flatMap((i) => (i[named] ? [nameKey(i[named].name)] : [])))];
  const rows = await query<LookupRow>(em, LOOKUP_NAMES, [catalogId, skus, names('category'), names('brand')]);
  for (const row of rows) {
    if (row.kind === 'category') result.categories.set(row.k!, row.id);
    else if (row.kind === 'brand') result.brands.set(row.k!, row.id);
    else {
      const key = identityKey(row.s!, row.e!);
      result.items.set(key, { id: row.id, externalSystem: row.s!, externalId: row.e!, contentHash: row.h!, sku: row.k });
      if (row.k !== null) result.skuOwners.set(row.k, key);
    }
  }
  return result;
}

// Import lines already stored: the item, if any, whose last write came from a line with this
// fingerprint. At most one item can carry a fingerprint (a line names one identity).
const BY_FINGERPRINT = prepared(`
    SELECT t.ord, i.external_system AS s, i.external_id AS e
    FROM unnest($2::text[]) WITH ORDINALITY AS t(f, ord)
    CROSS JOIN LATERAL (SELECT i.external_system, i.external_id FROM items i
      WHERE i.catalog_id = $1 AND i.import_fingerprint = decode(t.f, 'hex') LIMIT 1) i`);

/**
 * Of `fingerprints` (hex; undefined for a line without one), those an item of the catalog
 * carries: by position, the identity key of that item. Such a line is exactly the one that last
 * wrote its item, so upserting it again would find it unchanged.
 */
export async function itemsByFingerprint(em: EntityManager, catalogId: string, fingerprints: ReadonlyArray<string | undefined>): Promise<Map<number, string>> {
  const rows = await query<{ ord: string; s: string; e: string }>(em, BY_FINGERPRINT, [catalogId, fingerprints.map((f) => f ?? null)]);
  return new Map(rows.map((row) => [Number(row.ord) - 1, identityKey(row.s, row.e)]));
}

export interface WriteCandidate {
  /** Pre-generated UUIDv7, used when the row is created. */
  id: string;
  item: NormalizedItem;
  /** Hex fingerprint of the import line (domain/imports/fingerprint.ts); absent for API writes. */
  fingerprint?: string;
}

export interface WrittenRow {
  id: string;
  external_system: string;
  external_id: string;
  inserted: boolean;
}

export interface NewName {
  id: string;
  name: string;
  key: string;
}

export interface Names {
  categories: Map<string, string>;
  brands: Map<string, string>;
  newCategories: NewName[];
  newBrands: NewName[];
}

/** A written item as the write statement's stored form returns it. */
export type StoredRow = ItemRow & {
  /** true: created; false: updated. */
  inserted: boolean;
};

// The write's input: a JSON array of rows, each an array of these columns in this order
// (writeInput). Positions, not keys: Postgres parses the whole input once into jsonb and reads
// each value by its index, where json_to_recordset built a hash table of every row's keys and
// parsed the jsonb columns again: 5.2 µs a row of the server's CPU against 8.5. A JSON null is
// SQL NULL in every column (`->>` gives it for the others; nullif for the jsonb ones).
const INPUT_COLUMNS = [
  ['ord', 'int'], ['id', 'uuid'], ['ev', 'uuid'], ['at', 'text'], ['s', 'text'], ['e', 'text'], ['sku', 'text'],
  ['name', 'text'], ['description', 'text'], ['price', 'numeric'], ['cost', 'numeric'], ['weight', 'numeric'],
  ['gtin13', 'text'], ['ncm', 'text'], ['ck', 'text'], ['cid', 'uuid'], ['bk', 'text'], ['bid', 'uuid'],
  ['tags', 'jsonb'], ['metadata', 'jsonb'], ['media', 'jsonb'], ['ts', 'boolean'], ['h', 'text'], ['f', 'text'],
] as const;

// A name by id: one made by this statement is not visible in the table yet. Subqueries, not
// joins, so each is an index probe whatever the planner thinks of the table's size.
const storedName = (table: string, created: string, id: string) =>
  `coalesce((SELECT n.name FROM ${created} n WHERE n.id = ${id}), (SELECT t.name FROM ${table} t WHERE t.id = ${id}))`;

function writeStatement(full: boolean, rider?: WriteRiderSql): string {
  const gated = rider ? 'WHERE EXISTS (SELECT FROM gate)' : '';
  return `
    WITH ${rider ? `${rider.gate}, ` : ''}new_categories AS (
      INSERT INTO categories AS c (id, catalog_id, name, name_key)
      SELECT n.id, $1, n.name, n.key FROM jsonb_to_recordset($2::jsonb) AS n(id uuid, name text, key text) ${gated}
      ON CONFLICT (catalog_id, name_key) DO UPDATE SET name_key = excluded.name_key
      RETURNING c.id, c.name_key, c.name
    ), new_brands AS (
      INSERT INTO brands AS b (id, catalog_id, name, name_key)
      SELECT n.id, $1, n.name, n.key FROM jsonb_to_recordset($3::jsonb) AS n(id uuid, name text, key text) ${gated}
      ON CONFLICT (catalog_id, name_key) DO UPDATE SET name_key = excluded.name_key
      RETURNING b.id, b.name_key, b.name
    ), input AS (
      SELECT ${INPUT_COLUMNS.map(([name, type], i) => (type === 'jsonb' ? `nullif(r->${i}, 'null')` : `(r->>${i})::${type}`) + ` AS ${name}`).join(', ')}
      FROM jsonb_array_elements($4::jsonb) AS r
    ), written AS (
      INSERT INTO items AS i (id, catalog_id, external_system, external_id, sku, name, description, price, cost,
        weight, gtin13, ncm, category_id, brand_id, tags, metadata, media, track_stock, content_hash, import_fingerprint)
      SELECT x.id, $1, x.s, x.e, x.sku, x.name, x.description, x.price, x.cost, x.weight, x.gtin13, x.ncm,
        coalesce(x.cid, (SELECT n.id FROM new_categories n WHERE n.name_key = x.ck)),
        coalesce(x.bid, (SELECT n.id FROM new_brands n WHERE n.name_key = x.bk)),
        ARRAY(SELECT jsonb_array_elements_text(x.tags)), x.metadata, x.media, x.ts, x.h, decode(x.f, 'hex')
      FROM input x ${gated}
      ORDER BY x.ord
      ON CONFLICT (catalog_id, external_system, external_id) DO UPDATE SET
        sku = excluded.sku, name = excluded.name, description = excluded.description, price = excluded.price,
        cost = excluded.cost, weight = excluded.weight, gtin13 = excluded.gtin13, ncm = excluded.ncm,
        category_id = excluded.category_id, brand_id = excluded.brand_id, tags = excluded.tags,
        metadata = excluded.metadata, media = excluded.media, track_stock = excluded.track_stock,
        content_hash = excluded.content_hash, import_fingerprint = excluded.import_fingerprint, updated_at = now()
        WHERE i.content_hash <> excluded.content_hash
      RETURNING i.*, (i.xmax = 0) AS inserted
    ), events AS (
      INSERT INTO outbox (event_id, topic, key, payload, headers)
      SELECT x.ev, $5, x.e,
        '{"id":' || to_json(x.ev::text)::text
        || ',"type":' || CASE WHEN w.inserted THEN '"item.created"' ELSE '"item.updated"' END
        || ',"catalogId":' || to_json($1::text)::text || ',"resourceId":' || to_json(x.e)::text
        || ',"createdAt":' || to_json(x.at)::text
        || ',"data":{"externalId":' || to_json(x.e)::text || ',"externalSystem":' || to_json(x.s)::text
        || ',"serviceId":' || to_json(w.id::text)::text || ',"sku":' || coalesce(to_json(x.sku)::text, 'null')
        || CASE WHEN w.inserted THEN '' ELSE ',"contentHash":' || to_json(x.h)::text END || '}}',
        jsonb_build_object('event-type', CASE WHEN w.inserted THEN 'item.created' ELSE 'item.updated' END)
      FROM written w JOIN input x ON x.s = w.external_system AND x.e = w.external_id
      RETURNING 1
    ), notified AS (
      SELECT pg_notify($6, '') FROM (SELECT 1 FROM events LIMIT 1) AS any_event
    )${rider ? `, ${rider.ctes}` : ''}
    ${full ? `
    SELECT i.inserted, ${itemColumns(storedName('categories', 'new_categories', 'i.category_id'), storedName('brands', 'new_brands', 'i.brand_id'))}
    FROM written i, (SELECT count(*) FROM notified) AS n`
    : `SELECT w.id, w.external_system, w.external_id, w.inserted${rider ? ', NULL::bigint AS applied' : ''}
    FROM written w, (SELECT count(*) FROM notified) AS n`}${rider ? `
    UNION ALL SELECT NULL, NULL, NULL, NULL, (SELECT count(*) FROM ${rider.applied})` : ''}`;
}

const WRITE_ITEMS = prepared(writeStatement(false));
const WRITE_ITEMS_RETURNING_STORED = prepared(writeStatement(true));
const writeWithRider = new Map<WriteRiderSql, string>();

/**
 * Statement parts that ride on a write and commit with it, in its statement (an import batch's
 * line errors, counters and cursor). The write is then gated: without a row from `gate` the
 * statement writes nothing, neither items nor names nor events.
 */
export interface WriteRiderSql {
  /** `gate AS (…)`, first of the statement's CTEs. */
  readonly gate: string;
  /** The rider's CTEs, after the write's own: they may read `gate` and `written`, and take parameters from $7 on. */
  readonly ctes: string;
  /** The CTE whose rows tell that the rider applied. */
  readonly applied: string;
}

export interface WriteRider {
  readonly sql: WriteRiderSql;
  /** $7 on. */
  readonly params: readonly unknown[];
}

/**
 * One statement, atomic on its own, so a batch costs a single round trip:
 * 1. creates the missing categories and brands (ON CONFLICT DO UPDATE so a name a concurrent
 *    request created meanwhile still returns its id: exactly one row per name);
 * 2. inserts or updates the items; the update applies only when the hash differs, so a row
 *    that became equal meanwhile is not rewritten (and not returned);
 * 3. appends item.created / item.updated to the outbox for exactly the rows written, deciding
 *    the type and serviceId from what the database did, not from the earlier lookup, so a
 *    concurrent writer cannot make an event lie; and wakes the relay.
 * The event text is assembled here in the same key order and escaping as domainEvent's
 * JSON.stringify (to_json escapes like JSON.stringify for these strings).
 * With `stored`, each row returned is the written item's StoredRow (ItemRow columns and
 * `inserted`), with the names as stored (a category first spelled otherwise keeps that spelling).
 */
export async function writeItems(em: EntityManager, catalogId: string, input: WriteInput, stored: boolean): Promise<WrittenRow[]> {
  return query<WrittenRow>(em, stored ? WRITE_ITEMS_RETURNING_STORED : WRITE_ITEMS, writeParams(catalogId, input));
}

/**
 * writeItems with a rider, one statement: its rows, and whether the rider applied. When it did
 * not (no row from its gate), nothing was written.
 */
export async function writeItemsWithRider(em: EntityManager, catalogId: string, input: WriteInput, rider: WriteRider): Promise<{ rows: WrittenRow[]; applied: boolean }> {
  let text = writeWithRider.get(rider.sql);
  if (text === undefined) {
    text = prepared(writeStatement(false, rider.sql));
    writeWithRider.set(rider.sql, text);
  }
  const rows = await query<WrittenRow & { applied: string | null }>(em, text, [...writeParams(catalogId, input), ...rider.params]);
  // One row is the rider's: it alone has `applied` (a count); the others are the rows written.
  const trailer = rows.find((row) => row.applied !== null);
  return { rows: rows.filter((row) => row !== trailer), applied: Number(trailer?.applied ?? 0) > 0 };
}

const writeParams = (catalogId: string, input: WriteInput) =>
  [catalogId, JSON.stringify(input.names.newCategories), JSON.stringify(input.names.newBrands), input.rows, TOPICS.events, OUTBOX_CHANNEL];

/** What writeItems sends: built apart, so a caller can build it while it waits for its turn to write. */
export interface WriteInput {
  readonly names: Names;
  /** The rows, as the statement's JSON input: an array of arrays in INPUT_COLUMNS order. */
  readonly rows: string;
}

/** The write statement's input for `candidates`: ids for their events, and the ids of the names known. */
export function writeInput(candidates: readonly WriteCandidate[], names: Names): WriteInput {
  const now = new Date().toISOString();
  const rows = JSON.stringify(candidates.map(({ id, item, fingerprint }, ord) => {
    const categoryKey = item.category ? nameKey(item.category.name) : null;
    const brandKey = item.brand ? nameKey(item.brand.name) : null;
    // INPUT_COLUMNS, in its order.
    return [
      ord, id, newId(), now, item.externalSystem, item.externalId, item.sku,
      item.name, item.description, item.price, item.cost, item.weight,
      item.gtin13, item.ncm, categoryKey, categoryKey === null ? null : names.categories.get(categoryKey) ?? null,
      brandKey, brandKey === null ? null : names.brands.get(brandKey) ?? null,
      item.tags, item.metadata, item.media.map((m) => ({ url: m.url, role: m.role, sortOrder: m.sortOrder, sourceUrlHash: m.sourceUrlHash })),
      item.trackStock, item.contentHash, fingerprint ?? null,
    ];
  }));
  return { names, rows };
}
