// DELETE /items/{externalSystem}/{externalId}: destructive; emits item.deleted.
import { deleteItem as removeItem } from '../../domain/items/delete.ts';
import { normalizeText } from '../../domain/items/payload.ts';
import { requestSource } from '../../domain/items/version-source.ts';
import type { Handler } from '../handler.ts';

export const deleteItem: Handler<'deleteItem'> = async ({ em, auth, params, requestId, headers }) => ({
  status: 200,
  data: {
    deleted: true,
    ...await removeItem(em, auth.catalogId, normalizeText(params.externalSystem), normalizeText(params.externalId), requestSource(auth.keyId, requestId, headers)),
  },
});
