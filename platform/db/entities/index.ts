// Every entity the ORM knows; the schema itself is owned by the committed migrations.
import { ApiKey, Catalog, IdempotencyKey, RateLimit } from './catalogs.ts';
import { ImportError, ImportJob } from './imports.ts';
import { Brand, Category, Item, MediaAsset, StockMovement } from './items.ts';
import { Webhook } from './webhooks.ts';

export const entities = [
  Catalog, ApiKey, RateLimit, IdempotencyKey,
  Category, Brand, Item, MediaAsset, StockMovement,
  ImportJob, ImportError,
  Webhook,
];
