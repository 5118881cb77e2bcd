// Reading items: one by identity, pages by cursor with filters, and the whole catalog as a stream.
import type { EntityManager } from '@mikro-orm/postgresql';
import { prepared, query } from '../../platform/db/sql.ts';
import { notFound } from '../../platform/errors.ts';
import { decodeCursor, encodeCursor } from '../pagination.ts';
import { ITEM_SELECT, itemView } from './view.ts';
import type { ItemRow, ItemView } from './view.ts';
import { nameKey } from './store.ts';

const GET_ITEM = prepared(`${ITEM_SELECT} WHERE i.catalog_id = $1 AND i.external_system = $2 AND i.external_id = $3`);

export async function getItem(em: EntityManager, catalogId: string, externalSystem: string, externalId: string): Promise<ItemView> {
  const [row] = await query<ItemRow>(em, GET_ITEM, [catalogId, externalSystem, externalId]);
  // Another catalog's item is as absent as a missing one: 404, never 403.
  if (!row) throw notFound(`Item ${externalSystem}/${externalId}`);
  return itemView(row);
}

export interface ItemFilters {
  updatedSince?: string;
  sku?: string;
  category?: string;
  brand?: string;
  tag?: string;
}

export async function listItems(
  em: EntityManager,
  catalogId: string,
  filters: ItemFilters,
  page: { limit: number; cursor?: string },
): Promise<{ items: ItemView[]; nextCursor: string | null }> {
  const where = ['i.catalog_id = ?'];
  const params: unknown[] = [catalogId];
  if (filters.updatedSince) {
    where.push('i.updated_at >= ?::timestamptz');
    params.push(filters.updatedSince);
  }
  if (filters.sku) {
    where.push('i.sku = ?');
    params.push(filters.sku);
  }
  if (filters.category) {
    where.push('c.name_key = ?');
    params.push(nameKey(filters.category.trim().normalize('NFC')));
  }
  if (filters.brand) {
    where.push('b.name_key = ?');
    params.push(nameKey(filters.brand.trim().normalize('NFC')));
  }
  if (filters.tag) {
    where.push('i.tags @> ARRAY[?]::text[]');
    params.push(filters.tag.trim().normalize('NFC'));
  }
  if (page.cursor) {
    // The last row's exact (updated_at, id): pages never skip or repeat a row.
    const after = decodeCursor(page.cursor);
    where.push('(i.updated_at, i.id) > (?::timestamptz, ?::uuid)');
    params.push(after.at, after.id);
  }
  const rows = await em.execute<ItemRow[]>(
    `${ITEM_SELECT} WHERE ${where.join(' AND ')} ORDER BY i.updated_at, i.id LIMIT ?`,
    [...params, page.limit + 1],
  );
  const more = rows.length > page.limit;
  const pageRows = more ? rows.slice(0, page.limit) : rows;
  const last = pageRows.at(-1);
  return { items: pageRows.map(itemView), nextCursor: more && last ? encodeCursor({ at: last.updated_at_text, id: last.id }) : null };
}

/** Rows fetched per round trip while exporting: memory stays flat whatever the catalog's size. */
const EXPORT_CHUNK = 500;

/**
 * Every item of the catalog as JSONL lines in the upsert payload shape, read through a
 * server-side cursor. Re-importing a line yields the same contentHash.
 */
export async function* exportItems(em: EntityManager, catalogId: string, filters: { updatedSince?: string } = {}): AsyncGenerator<string> {
  const params: unknown[] = [catalogId];
  let where = 'i.catalog_id = ?';
  if (filters.updatedSince) {
    where += ' AND i.updated_at >= ?::timestamptz';
    params.push(filters.updatedSince);
  }
  const rows = em.getConnection().stream<ItemRow>(
    `${ITEM_SELECT} WHERE ${where} ORDER BY i.external_system, i.external_id`,
    params, undefined, undefined, EXPORT_CHUNK,
  );
  for await (const row of rows) yield `${JSON.stringify(exportLine(itemView(row)))}\n`;
}

function exportLine(item: ItemView): Record<string, unknown> {
  const line: Record<string, unknown> = { externalSystem: item.externalSystem, externalId: item.externalId, name: item.name };
  const optional = { sku: item.sku, description: item.description, price: item.price, cost: item.cost, weight: item.weight, gtin13: item.gtin13, ncm: item.ncm };
  for (const [field, value] of Object.entries(optional)) if (value !== null) line[field] = value;
  if (item.category) line.category = { name: item.category.name };
  if (item.brand) line.brand = { name: item.brand.name };
  if (item.tags.length > 0) line.tags = item.tags;
  if (item.metadata !== null) line.metadata = item.metadata;
  if (item.media.length > 0) line.media = item.media.map((m) => ({ url: m.url, role: m.role, sortOrder: m.sortOrder }));
  line.trackStock = item.trackStock;
  return line;
}
