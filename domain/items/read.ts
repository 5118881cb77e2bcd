// Reading items: one by identity, pages by cursor with filters, and the whole catalog as a stream.
import type { Db } from '../../platform/db/sql.ts';
import { notFound } from '../../platform/errors.ts';
import { nameKey } from './keys.ts';
import { normalizeText as text } from './payload.ts';
import { itemRow, listItemRows, streamItemRows } from './store.ts';
import { itemView } from './view.ts';
import type { ItemView } from './view.ts';

export async function getItem(db: Db, catalogId: string, externalSystem: string, externalId: string): Promise<ItemView> {
  const row = await itemRow(db, catalogId, externalSystem, externalId);
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
  sourceUrlHash?: string;
}

export async function listItems(
  db: Db,
  catalogId: string,
  filters: ItemFilters,
  page: { limit: number; cursor?: string | undefined },
): Promise<{ items: ItemView[]; nextCursor: string | null }> {
  const { rows, nextCursor } = await listItemRows(db, catalogId, {
    updatedSince: filters.updatedSince || undefined,
    sku: filters.sku || undefined,
    categoryKey: filters.category ? nameKey(text(filters.category)) : undefined,
    brandKey: filters.brand ? nameKey(text(filters.brand)) : undefined,
    tag: filters.tag ? text(filters.tag) : undefined,
    sourceUrlHash: filters.sourceUrlHash || undefined,
  }, page);
  return { items: rows.map(itemView), nextCursor };
}

/**
 * Every item of the catalog as JSONL lines in the upsert payload shape, read through a
 * server-side cursor. Re-importing a line yields the same contentHash.
 */
export async function* exportItems(db: Db, catalogId: string, filters: { updatedSince?: string | undefined } = {}): AsyncGenerator<string> {
  for await (const row of streamItemRows(db, catalogId, filters.updatedSince || undefined)) yield `${JSON.stringify(exportLine(itemView(row)))}\n`;
}

export function exportLine(item: ItemView): Record<string, unknown> {
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
