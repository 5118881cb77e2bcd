// GET /items/{externalSystem}/{externalId}/versions: the item's versions, newest first, with a cursor; also after a delete.
import { normalizeText } from '../../domain/items/payload.ts';
import { listVersions } from '../../domain/items/versions.ts';
import type { Handler } from '../handler.ts';

export const listItemVersions: Handler<'listItemVersions'> = async ({ em, auth, params, query }) => ({
  status: 200,
  data: await listVersions(em, auth.catalogId, normalizeText(params.externalSystem), normalizeText(params.externalId), {
    limit: query.limit ?? 50,
    cursor: query.cursor,
  }),
});
