// PATCH /keys/{keyId}: sets or clears one of the catalog's keys' address ranges and expiry.
import { limitCatalogKey } from '../../domain/access/keys.ts';
import type { Handler } from '../handler.ts';

export const updateKey: Handler<'updateKey'> = async ({ auth, actor, params, body, em }) => ({
  status: 200,
  data: await limitCatalogKey(em, auth.catalogId, params.keyId, body, actor),
});
