// Entities of the catalog's content: items, their categories, brands, media assets and stock.
import { defineEntity, p } from '@mikro-orm/postgresql';
import type { InferEntity } from '@mikro-orm/postgresql';

const namedEntity = (name: string, tableName: string) =>
  defineEntity({
    name,
    tableName,
    properties: {
      id: p.uuid().primary(),
      catalogId: p.uuid(),
      name: p.text(),
      nameKey: p.text(),
      createdAt: p.datetime().onCreate(() => new Date()),
    },
  });

export const Category = namedEntity('Category', 'categories');
export const Brand = namedEntity('Brand', 'brands');

export const Item = defineEntity({
  name: 'Item',
  tableName: 'items',
  properties: {
    id: p.uuid().primary(),
    catalogId: p.uuid(),
    externalSystem: p.text(),
    externalId: p.text(),
    sku: p.text().nullable(),
    name: p.text(),
    description: p.text().nullable(),
    price: p.decimal('string').nullable(),
    cost: p.decimal('string').nullable(),
    weight: p.decimal('string').nullable(),
    gtin13: p.text().nullable(),
    ncm: p.text().nullable(),
    categoryId: p.uuid().nullable(),
    brandId: p.uuid().nullable(),
    tags: p.array(),
    metadata: p.json<Record<string, unknown>>().nullable(),
    media: p.json<unknown[]>(),
    trackStock: p.boolean(),
    onHand: p.integer(),
    contentHash: p.text(),
    /** SHA-256 of the import line that last wrote the item; null once an upsert request wrote it. */
    importFingerprint: p.blob().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Item = InferEntity<typeof Item>;

export const MediaAsset = defineEntity({
  name: 'MediaAsset',
  tableName: 'media_assets',
  properties: {
    id: p.uuid().primary(),
    catalogId: p.uuid(),
    sourceUrl: p.text(),
    sourceUrlHash: p.text(),
    status: p.enum(['pending', 'ingested', 'failed'] as const),
    etag: p.text().nullable(),
    contentType: p.text().nullable(),
    width: p.integer().nullable(),
    height: p.integer().nullable(),
    byteSize: p.bigint('number').nullable(),
    contentSha256: p.text().nullable(),
    storagePath: p.text().nullable(),
    attempts: p.integer(),
    lastError: p.text().nullable(),
    lastCheckedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type MediaAsset = InferEntity<typeof MediaAsset>;

export const StockMovement = defineEntity({
  name: 'StockMovement',
  tableName: 'stock_movements',
  properties: {
    id: p.uuid().primary(),
    catalogId: p.uuid(),
    itemId: p.uuid(),
    quantity: p.integer(),
    reason: p.text(),
    reference: p.text().nullable(),
    occurredAt: p.datetime(),
    onHandAfter: p.integer(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type StockMovement = InferEntity<typeof StockMovement>;
