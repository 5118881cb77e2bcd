// The items store, the write: items, their new categories and brands and their events, one statement per batch.
import { traceparent } from '../../platform/tracing.ts';
import { prepared, query, sql } from '../../platform/db/sql.ts';
import type { Db, SqlFragment } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { envelopeSql } from '../events/envelope.ts';
import { appendEventsCtes } from '../events/outbox.ts';
import { ITEM_KEY } from './changelog.ts';
import { nameKey } from './keys.ts';
import type { NormalizedItem } from './normalized-item.ts';
import { itemColumns, itemJson } from './view.ts';
import type { VersionSource } from './version-source.ts';
import type { ItemRow } from './view.ts';

export interface WriteCandidate {
  /** Pre-generated UUIDv7, used when the row is created. */
  id: string;
  item: NormalizedItem;
  /** Hex fingerprint of the import line (domain/imports/fingerprint.ts); absent for API writes. */
  fingerprint?: string;
  /** The stored item names media: its write waits for their state changes too (lockNamedAssets). */
  hadMedia?: boolean;
  /** The trace context of the request that asked for it, when that is not the span current at the write. */
  traceparent?: string;
  /** The lookup found no item with this identity: its version goes on from the last one recorded, if any. */
  isNew?: boolean;
  /** Where the write comes from, recorded with its version (domain/items/versions.ts). */
  source?: VersionSource | undefined;
}

/** An item the write created or updated. */
export interface WrittenRow {
  id: string;
  external_system: string;
  external_id: string;
  /** true: created; false: updated. */
  inserted: boolean;
}

/** A written item as the write returns it when asked for the stored items. */
export type StoredRow = ItemRow & WrittenRow;

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

/**
 * An import batch's record (its line errors, counters and cursor) that commits with the write,
 * in its statement, each part a `sql` fragment with its own parameters. The write is gated:
 * without a row from `gate` the statement writes nothing, neither items nor names nor events.
 */
export interface BatchRecord {
  /** A query; the statement's first CTE, named `gate`. */
  readonly gate: SqlFragment;
  /** CTE definitions (`name AS (…), …`) after the write's own; they may read `gate` and `written` (the rows written). */
  readonly ctes: SqlFragment;
  /** An expression that counts the rows proving the record applied, e.g. `(SELECT count(*) FROM recorded)`. */
  readonly applied: SqlFragment;
}

// The write's input: a JSON array of rows, each an array of these columns in this order
// (writeInput). Positions, not keys: Postgres parses the whole input once into jsonb and reads
// each value by its index, where json_to_recordset builds a hash table of every row's keys and
// parses the jsonb columns again. A JSON null is SQL NULL in every column (`->>` gives it for
// the others; nullif for the jsonb ones).
const INPUT_COLUMNS = [
  ['ord', 'int'], ['id', 'uuid'], ['event_id', 'uuid'], ['written_at', 'text'], ['external_system', 'text'], ['external_id', 'text'],
  ['sku', 'text'], ['name', 'text'], ['description', 'text'], ['price', 'numeric'], ['cost', 'numeric'], ['weight', 'numeric'],
  ['gtin13', 'text'], ['ncm', 'text'], ['category_key', 'text'], ['category_id', 'uuid'], ['brand_key', 'text'], ['brand_id', 'uuid'],
  ['tags', 'jsonb'], ['metadata', 'jsonb'], ['media', 'jsonb'], ['track_stock', 'boolean'], ['content_hash', 'text'],
  ['fingerprint', 'text'], ['traceparent', 'text'], ['is_new', 'boolean'], ['source', 'jsonb'],
] as const;

const INPUT_SELECT = sql.raw(INPUT_COLUMNS.map(([name, type], i) =>
  (type === 'jsonb' ? `nullif(r->${i}, 'null')` : `(r->>${i})::${type}`) + ` AS ${name}`).join(', '));

// A name by id: one made by this statement is not visible in the table yet. Subqueries, not
// joins, so each is an index probe whatever the planner thinks of the table's size.
const storedName = (table: string, created: string, id: string) =>
  `coalesce((SELECT n.name FROM ${created} n WHERE n.id = ${id}), (SELECT t.name FROM ${table} t WHERE t.id = ${id}))`;

// The written item as GET answers it, for its event and its changelog record.
const SNAPSHOT = sql.raw(itemJson(storedName('categories', 'new_categories', 'i.category_id'), storedName('brands', 'new_brands', 'i.brand_id')));

// The top-level fields of the item (contract: Item) an upsert writes: each with its column and
// its stored value as the item's JSON has it (media: its entries as sent, without asset state).
const named = (table: string, column: string) => `(SELECT jsonb_build_object('id', n.id, 'name', n.name) FROM ${table} n WHERE n.id = i.${column})`;
const FIELDS: ReadonlyArray<readonly [field: string, column: string, value: string]> = [
  ['sku', 'sku', 'to_jsonb(i.sku)'], ['name', 'name', 'to_jsonb(i.name)'], ['description', 'description', 'to_jsonb(i.description)'],
  ['price', 'price', 'to_jsonb(i.price::float8)'], ['cost', 'cost', 'to_jsonb(i.cost::float8)'], ['weight', 'weight', 'to_jsonb(i.weight::float8)'],
  ['gtin13', 'gtin13', 'to_jsonb(i.gtin13)'], ['ncm', 'ncm', 'to_jsonb(i.ncm)'], ['category', 'category_id', named('categories', 'category_id')],
  ['brand', 'brand_id', named('brands', 'brand_id')], ['tags', 'tags', 'to_jsonb(i.tags)'], ['metadata', 'metadata', 'i.metadata'],
  ['trackStock', 'track_stock', 'to_jsonb(i.track_stock)'], ['media', 'media', 'i.media'],
];
const changed = (column: string) => `i.${column} IS DISTINCT FROM excluded.${column}`;

// item.updated's changedFields: the fields whose stored value the update changes, computed from
// the row it replaces (`i`) and the new one (`excluded`); and previousAttributes, their values in `i`.
const CHANGED_FIELDS = sql.raw(`array_remove(ARRAY[${FIELDS.map(([field, column]) => `CASE WHEN ${changed(column)} THEN '${field}' END`).join(', ')}], NULL)`);
const PREVIOUS_VALUES = sql.raw(FIELDS.map(([field, column, value]) =>
  `CASE WHEN ${changed(column)} THEN jsonb_build_object('${field}', ${value}) ELSE '{}'::jsonb END`).join(' || '));

const RETURN_STORED = sql.raw(`SELECT i.inserted, ${itemColumns(storedName('categories', 'new_categories', 'i.category_id'),
  storedName('brands', 'new_brands', 'i.brand_id'))}
    FROM written i, (SELECT count(*) FROM notified) AS n`);
// The item event's type and data, from the snapshot; its envelope is envelopeSql's.
const EVENT_TYPE = sql.raw(`CASE WHEN s.inserted THEN 'item.created' ELSE 'item.updated' END`);
const EVENT_DATA = sql.raw(`CASE WHEN s.inserted THEN s.item ELSE concat(left(s.item, -1), ',"previousContentHash":"', s.previous_content_hash,
  '","changedFields":', to_json(s.changed_fields), ',"previousAttributes":', s.previous_values, '}') END`);

const RETURN_KEYS = sql.raw('SELECT w.id, w.external_system, w.external_id, w.inserted');
const AFTER_NOTIFY = sql.raw('FROM written w, (SELECT count(*) FROM notified) AS n');

/** Inserts `names` into `table` (categories or brands), or finds the row a concurrent writer made. */
function insertNames(table: 'categories' | 'brands', catalog: SqlFragment, names: readonly NewName[], gated: SqlFragment): SqlFragment {
  return sql`INSERT INTO ${sql.raw(table)} AS t (id, catalog_id, name, name_key)
      SELECT n.id, ${catalog}, n.name, n.key
      FROM jsonb_to_recordset(${JSON.stringify(names)}::jsonb) AS n(id uuid, name text, key text) ${gated}
      ON CONFLICT (catalog_id, name_key) DO UPDATE SET name_key = excluded.name_key
      RETURNING t.id, t.name_key, t.name`;
}

/**
 * The write of `input`; its text depends only on `stored` and the batch record's parts, so it runs
 * as a named prepared statement. See writeItems.
 */
function writeStatement(catalogId: string, input: WriteInput, stored: boolean, batchRecord?: BatchRecord): SqlFragment {
  const catalog = sql`${catalogId}::uuid`;
  const gated = batchRecord ? sql`WHERE EXISTS (SELECT FROM gate)` : sql``;
  return prepared(sql`
    WITH ${batchRecord ? sql`gate AS (${batchRecord.gate}), ` : sql``}new_categories AS (
      ${insertNames('categories', catalog, input.names.newCategories, gated)}
    ), new_brands AS (
      ${insertNames('brands', catalog, input.names.newBrands, gated)}
    ), input AS (
      SELECT ${INPUT_SELECT} FROM jsonb_array_elements(${input.rows}::jsonb) AS r
    ), written AS (
      INSERT INTO items AS i (id, catalog_id, external_system, external_id, sku, name, description, price, cost,
        weight, gtin13, ncm, category_id, brand_id, tags, metadata, media, track_stock, content_hash, import_fingerprint, version)
      SELECT x.id, ${catalog}, x.external_system, x.external_id, x.sku, x.name, x.description, x.price, x.cost, x.weight, x.gtin13, x.ncm,
        coalesce(x.category_id, (SELECT n.id FROM new_categories n WHERE n.name_key = x.category_key)),
        coalesce(x.brand_id, (SELECT n.id FROM new_brands n WHERE n.name_key = x.brand_key)),
        ARRAY(SELECT jsonb_array_elements_text(x.tags)), x.metadata, x.media, x.track_stock, x.content_hash, decode(x.fingerprint, 'hex'),
        CASE WHEN x.is_new THEN coalesce((SELECT max(v.version) FROM item_versions v
          WHERE v.catalog_id = ${catalog} AND v.external_system = x.external_system AND v.external_id = x.external_id), 0) + 1 ELSE 1 END
      FROM input x ${gated}
      ORDER BY x.ord
      ON CONFLICT (catalog_id, external_system, external_id) DO UPDATE SET
        sku = excluded.sku, name = excluded.name, description = excluded.description, price = excluded.price,
        cost = excluded.cost, weight = excluded.weight, gtin13 = excluded.gtin13, ncm = excluded.ncm,
        category_id = excluded.category_id, brand_id = excluded.brand_id, tags = excluded.tags,
        metadata = excluded.metadata, media = excluded.media, track_stock = excluded.track_stock,
        content_hash = excluded.content_hash, import_fingerprint = excluded.import_fingerprint, updated_at = now(),
        previous_content_hash = i.content_hash, changed_fields = ${CHANGED_FIELDS},
        version = i.version + 1, previous_values = ${PREVIOUS_VALUES}
        WHERE i.content_hash <> excluded.content_hash
      RETURNING i.*, (i.xmax = 0) AS inserted
    ), snapshots AS (
      SELECT i.inserted, x.ord, x.event_id, x.written_at, x.traceparent, i.id, i.external_system, i.external_id, i.previous_content_hash,
        i.changed_fields, i.previous_values, i.version, i.content_hash, x.source, ${SNAPSHOT} AS item, ${ITEM_KEY} AS key
      FROM written i JOIN input x ON x.external_system = i.external_system AND x.external_id = i.external_id
    ), versions AS (
      INSERT INTO item_versions (catalog_id, external_system, external_id, version, item_id, kind, created_at,
        content_hash, changed_fields, previous, item, source, event_id)
      SELECT ${catalog}, s.external_system, s.external_id, s.version, s.id, CASE WHEN s.inserted THEN 'created' ELSE 'updated' END,
        s.written_at::timestamptz, s.content_hash, s.changed_fields, s.previous_values, s.item, s.source, s.event_id
      FROM snapshots s
    ), ${appendEventsCtes(sql`
      SELECT s.event_id, ${TOPICS.events}::text, s.key, ${envelopeSql({
        id: sql`s.event_id`, type: EVENT_TYPE, catalogId: sql`${catalogId}::text`, resourceId: sql`s.external_id`, createdAt: sql`s.written_at`, data: EVENT_DATA,
      })}, ${EVENT_TYPE}, ${catalog}, s.ord, coalesce(s.traceparent, ${input.traceparent}::text)
      FROM snapshots s`)}${batchRecord ? sql`, ${batchRecord.ctes}` : sql``}
    ${stored ? RETURN_STORED : batchRecord ? sql`${RETURN_KEYS}, NULL::bigint AS applied ${AFTER_NOTIFY}
    UNION ALL SELECT NULL, NULL, NULL, NULL, ${batchRecord.applied}` : sql`${RETURN_KEYS} ${AFTER_NOTIFY}`}`);
}

/**
 * One statement, atomic on its own, so a batch costs a single round trip:
 * 1. creates the missing categories and brands (ON CONFLICT DO UPDATE so a name a concurrent
 *    request created meanwhile still returns its id: exactly one row per name);
 * 2. inserts or updates the items; the update applies only when the hash differs, so a row
 *    that became equal meanwhile is not rewritten (and not returned);
 * 3. appends item.created / item.updated to the outbox for exactly the rows written, each
 *    carrying the item as stored (itemJson; the relay also publishes it to the changelog, see
 *    itemRecordOf, so it must stay the last part of `data`), deciding the type
 *    from what the database did, not from the earlier lookup, and item.updated's
 *    previousContentHash and changedFields from the row the update replaced (the DO UPDATE
 *    records them on the row), so a concurrent writer cannot make an event lie; and wakes the relay;
 * 4. records each written row's version (item_versions: its changes, the item, its source).
 * The event's envelope is envelopeSql's, the same bytes as domainEvent's JSON.stringify; its data
 * is the snapshot, with item.updated's fields after it.
 * With `stored`, each row returned is the written item's StoredRow, with the names as stored (a
 * category first spelled otherwise keeps that spelling).
 */
export async function writeItems(db: Db, catalogId: string, input: WriteInput, stored: boolean): Promise<WrittenRow[]> {
  return query<WrittenRow>(db, 'items.write', writeStatement(catalogId, input, stored));
}

/**
 * writeItems with a batch record, one statement: its rows, and whether the batch record applied.
 * When it did not (no row from its gate), nothing was written.
 */
export async function writeItemsWithBatchRecord(db: Db, catalogId: string, input: WriteInput, batchRecord: BatchRecord): Promise<{ rows: WrittenRow[]; applied: boolean }> {
  const rows = await query<WrittenRow & { applied: string | null }>(db, 'items.write_with_batch_record', writeStatement(catalogId, input, false, batchRecord));
  // One row is the batch record's: it alone has `applied` (a count); the others are the rows written.
  const trailer = rows.find((row) => row.applied !== null);
  return { rows: rows.filter((row) => row !== trailer), applied: Number(trailer?.applied ?? 0) > 0 };
}

/** What writeItems sends: built apart, so a caller can build it while it waits for its turn to write. */
export interface WriteInput {
  readonly names: Names;
  /** The rows, as the statement's JSON input: an array of arrays in INPUT_COLUMNS order. */
  readonly rows: string;
  /** The trace context of the rows that have none of their own: the span current when it was built. */
  readonly traceparent: string | null;
}

/** The write statement's input for `candidates`: ids for their events, and the ids of the names known. */
export function writeInput(candidates: readonly WriteCandidate[], names: Names): WriteInput {
  const now = new Date().toISOString();
  const rows = JSON.stringify(candidates.map(({ id, item, fingerprint, traceparent: caller, isNew, source }, ord) => {
    const categoryKey = item.category ? nameKey(item.category.name) : null;
    const brandKey = item.brand ? nameKey(item.brand.name) : null;
    // INPUT_COLUMNS, in its order.
    return [
      ord, id, newId(), now, item.externalSystem, item.externalId, item.sku,
      item.name, item.description, item.price, item.cost, item.weight,
      item.gtin13, item.ncm, categoryKey, categoryKey === null ? null : names.categories.get(categoryKey) ?? null,
      brandKey, brandKey === null ? null : names.brands.get(brandKey) ?? null,
      item.tags, item.metadata, item.media.map((m) => ({ url: m.url, role: m.role, sortOrder: m.sortOrder, sourceUrlHash: m.sourceUrlHash })),
      item.trackStock, item.contentHash, fingerprint ?? null, caller ?? null, isNew ?? false, source ?? null,
    ];
  }));
  return { names, rows, traceparent: traceparent() ?? null };
}
