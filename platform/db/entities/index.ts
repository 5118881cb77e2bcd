// The entities the ORM maps: the low-volume tables managed a row at a time (catalogs, API keys, webhook subscriptions); every other table is SQL from its feature's store.
import { ApiKey, Catalog } from './catalogs.ts';
import { Webhook } from './webhooks.ts';

export const entities = [Catalog, ApiKey, Webhook];
