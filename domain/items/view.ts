// The item read model: one SQL projection and one mapping, shared by every read of an item.
import type { Item, ItemMedia, MediaRendition } from '../../generated/client.ts';
import type { Rendition } from '../media/renditions.ts';

// The read model is a wire shape: its types come from the contract.
export type ItemView = Item;
type ItemMediaView = ItemMedia;

/** Stored media entry (items.media): the payload's entry plus its deduplication key. */
export interface StoredMedia {
  url: string;
  role: 'primary' | 'gallery';
  sortOrder: number;
  sourceUrlHash: string;
}

interface AssetState {
  id: string;
  h: string;
  s: ItemMediaView['status'];
  ct: string | null;
  w: number | null;
  ht: number | null;
  bs: number | string | null;
  sha: string | null;
  r: Rendition[] | null;
  fr: NonNullable<ItemMediaView['failure']>['reason'] | null;
  err: string | null;
  n: number;
  lc: string | null;
}

export interface ItemRow {
  id: string;
  external_system: string;
  external_id: string;
  sku: string | null;
  name: string;
  description: string | null;
  price: string | null;
  cost: string | null;
  weight: string | null;
  gtin13: string | null;
  ncm: string | null;
  category_id: string | null;
  category_name: string | null;
  brand_id: string | null;
  brand_name: string | null;
  tags: string[];
  metadata: Record<string, unknown> | null;
  media: StoredMedia[];
  track_stock: boolean;
  on_hand: number;
  content_hash: string;
  created_at: string;
  updated_at: string;
  /** Exact text of updated_at (microseconds), for cursors. */
  updated_at_text: string;
  assets: AssetState[];
}

/**
 * The asset of the item `i`'s media entry with this sourceUrlHash, looked up by its key. The
 * LIMIT keeps it a lookup: flattened into a join, the planner (which expects 100 entries from
 * jsonb_array_elements) reads and hashes every asset of the catalog for each item.
 */
const ASSET_OF = (hash: string) => `SELECT * FROM media_assets a WHERE a.catalog_id = i.catalog_id AND a.source_url_hash = ${hash} LIMIT 1`;

/** A timestamptz column as the API's ISO 8601 UTC text with milliseconds. */
export const isoTime = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The ItemRow columns of an item row `i` (the items table, or a RETURNING of all its columns),
 * with the category's and brand's names given as SQL expressions.
 */
export const itemColumns = (categoryName: string, brandName: string) => `
  i.id, i.external_system, i.external_id, i.sku, i.name, i.description, i.price, i.cost, i.weight,
  i.gtin13, i.ncm, i.category_id, ${categoryName} AS category_name, i.brand_id, ${brandName} AS brand_name, i.tags,
  i.metadata, i.media, i.track_stock, i.on_hand, i.content_hash, ${isoTime('i.created_at')} AS created_at,
  ${isoTime('i.updated_at')} AS updated_at,
  i.updated_at::text AS updated_at_text,
  CASE WHEN jsonb_array_length(i.media) = 0 THEN '[]'::jsonb ELSE (
    SELECT coalesce(jsonb_agg(jsonb_build_object('id', a.id, 'h', a.source_url_hash, 's', a.status, 'ct', a.content_type,
      'w', a.width, 'ht', a.height, 'bs', a.byte_size, 'sha', a.content_sha256, 'r', a.renditions,
      'fr', a.failure_reason, 'err', a.last_error, 'n', a.attempts, 'lc', ${isoTime('coalesce(a.last_checked_at, a.created_at)')})), '[]'::jsonb)
    FROM (SELECT DISTINCT m ->> 'sourceUrlHash' AS h FROM jsonb_array_elements(i.media) m) m
    CROSS JOIN LATERAL (${ASSET_OF('m.h')}) a
  ) END AS assets`;

// A nullable SQL value as JSON text ('null' for NULL); to_json escapes strings as JSON.stringify does.
const json = (expr: string) => `coalesce(to_json(${expr})::text, 'null')`;
const named = (id: string, name: string) => `CASE WHEN ${id} IS NULL THEN 'null' ELSE concat('{"id":"', ${id}, '","name":', to_json(${name}), '}') END`;

// An asset's renditions and failure as the contract's JSON, without addresses (events outlive them).
const RENDITIONS_JSON = `(SELECT concat('[', string_agg(concat('{"name":', to_json(x ->> 'name'), ',"size":', x ->> 'size',
    ',"contentType":', to_json(x ->> 'contentType'), ',"width":', x ->> 'width', ',"height":', x ->> 'height',
    ',"byteSize":', x ->> 'byteSize', ',"contentSha256":', to_json(x ->> 'contentSha256'), ',"storedUrl":null}'), ',' ORDER BY o), ']')
    FROM jsonb_array_elements(a.renditions) WITH ORDINALITY AS r(x, o))`;
const FAILURE_JSON = `CASE WHEN a.status = 'failed' AND a.failure_reason IS NOT NULL THEN concat('{"reason":', to_json(a.failure_reason),
    ',"message":', to_json(coalesce(a.last_error, '')), ',"attempts":', greatest(a.attempts, 1),
    ',"lastAttemptAt":"', ${isoTime('coalesce(a.last_checked_at, a.created_at)')}, '"}') ELSE 'null' END`;

/**
 * The item as JSON text, as GET /items/{externalSystem}/{externalId} answers it (itemView's
 * fields in its order; numbers and strings as JSON.stringify writes them, `metadata` as jsonb
 * prints it), built by SQL from an items row `i`, with the category's and brand's names given as
 * SQL expressions: the events' snapshots and the item changelog (catalog.items.v1) take it in the
 * statement that makes the change. One concat() call: a chain of || copies the growing text at
 * every step, three times the cost.
 */
export const itemJson = (categoryName: string, brandName: string) => {
  const fields: Array<[string, string]> = [
    ['serviceId', `'"', i.id, '"'`], ['externalSystem', 'to_json(i.external_system)'], ['externalId', 'to_json(i.external_id)'],
    ['sku', json('i.sku')], ['name', 'to_json(i.name)'], ['description', json('i.description')],
    ['price', json('i.price::float8')], ['cost', json('i.cost::float8')], ['weight', json('i.weight::float8')],
    ['gtin13', json('i.gtin13')], ['ncm', json('i.ncm')],
    ['category', named('i.category_id', categoryName)], ['brand', named('i.brand_id', brandName)],
    ['tags', 'to_json(i.tags)'], ['metadata', `coalesce(i.metadata::text, 'null')`],
    ['trackStock', 'i.track_stock::text'], ['onHand', 'i.on_hand'],
    ['media', `CASE WHEN jsonb_array_length(i.media) = 0 THEN '[]' ELSE (
      SELECT concat('[', string_agg(concat('{"url":', to_json(m.e ->> 'url'), ',"role":', to_json(m.e ->> 'role'),
        ',"sortOrder":', m.e ->> 'sortOrder', ',"sourceUrlHash":', to_json(m.e ->> 'sourceUrlHash'), ',"assetId":', ${json('a.id')},
        ',"status":', to_json(coalesce(a.status, 'pending')), ',"contentType":', ${json('a.content_type')},
        ',"width":', ${json('a.width')}, ',"height":', ${json('a.height')}, ',"byteSize":', ${json('a.byte_size')},
        ',"contentSha256":', ${json('a.content_sha256')}, ',"storedUrl":null,"renditions":', ${RENDITIONS_JSON},
        ',"failure":', ${FAILURE_JSON}, '}'),
        ',' ORDER BY m.o), ']')
      FROM jsonb_array_elements(i.media) WITH ORDINALITY AS m(e, o)
      LEFT JOIN LATERAL (${ASSET_OF("m.e ->> 'sourceUrlHash'")}) a ON true) END`],
    ['contentHash', `'"', i.content_hash, '"'`],
    ['createdAt', `'"', ${isoTime('i.created_at')}, '"'`], ['updatedAt', `'"', ${isoTime('i.updated_at')}, '"'`],
  ];
  return `concat(${fields.map(([field, value], n) => `'${n === 0 ? '{' : ','}"${field}":', ${value}`).join(',\n    ')}, '}')`;
};

/** Selects ItemRow columns from `items i`; the caller adds WHERE / ORDER BY / LIMIT. */
export const ITEM_SELECT = `
SELECT ${itemColumns('c.name', 'b.name')}
FROM items i
LEFT JOIN categories c ON c.id = i.category_id
LEFT JOIN brands b ON b.id = i.brand_id`;

const decimal = (value: string | null): number | null => (value === null ? null : Number(value));

/** A stored rendition in the contract's shape and field order (RENDITIONS_JSON's), its address not yet signed. */
export const renditionView = (r: Rendition): MediaRendition => ({
  name: r.name, size: r.size, contentType: r.contentType, width: r.width, height: r.height, byteSize: r.byteSize, contentSha256: r.contentSha256, storedUrl: null,
});

export function itemView(row: ItemRow): ItemView {
  const assets = new Map(row.assets.map((a) => [a.h, a]));
  return {
    serviceId: row.id,
    externalSystem: row.external_system,
    externalId: row.external_id,
    sku: row.sku,
    name: row.name,
    description: row.description,
    price: decimal(row.price),
    cost: decimal(row.cost),
    weight: decimal(row.weight),
    gtin13: row.gtin13,
    ncm: row.ncm,
    category: row.category_id ? { id: row.category_id, name: row.category_name! } : null,
    brand: row.brand_id ? { id: row.brand_id, name: row.brand_name! } : null,
    tags: row.tags,
    metadata: row.metadata,
    trackStock: row.track_stock,
    onHand: row.on_hand,
    media: row.media.map((m) => {
      const asset = assets.get(m.sourceUrlHash);
      return {
        url: m.url,
        role: m.role,
        sortOrder: m.sortOrder,
        sourceUrlHash: m.sourceUrlHash,
        assetId: asset?.id ?? null,
        status: asset?.s ?? 'pending',
        contentType: asset?.ct ?? null,
        width: asset?.w ?? null,
        height: asset?.ht ?? null,
        byteSize: asset?.bs === undefined || asset.bs === null ? null : Number(asset.bs),
        contentSha256: asset?.sha ?? null,
        // Signed by the reads that answer a client (withStoredUrls); events keep null.
        storedUrl: null,
        renditions: (asset?.r ?? []).map(renditionView),
        failure: asset?.s === 'failed' && asset.fr ? { reason: asset.fr, message: asset.err ?? '', attempts: Math.max(asset.n, 1), lastAttemptAt: asset.lc! } : null,
      };
    }),
    contentHash: row.content_hash,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
