// GET /keys: the catalog's API keys, oldest first, never the keys themselves (scope keys:manage).
import { listCatalogKeys } from '../../domain/access/key-store.ts';
import type { Handler } from '../handler.ts';

export const listKeys: Handler<'listKeys'> = async ({ auth, query, em }) => ({
  status: 200,
  data: await listCatalogKeys(em, auth.catalogId, { limit: query.limit ?? 50, cursor: query.cursor }),
});
