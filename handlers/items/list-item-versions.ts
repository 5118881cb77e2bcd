// GET /items/{externalSystem}/{externalId}/versions: the item's versions, newest first, with a cursor; also after a delete.
import { normalizeText } from '../../domain/items/payload.ts';
import { listVersions } from '../../domain/items/versions.ts';
import type { Handler } from '../../platform/http/types.ts';

export const listItemVersions: Handler = async ({ em, auth, params, query }) => ({
  status: 200,
  data: await listVersions(em, auth.catalogId, normalizeText(params.externalSystem!), normalizeText(params.externalId!), {
    limit: (query.limit as number | undefined) ?? 50,
    cursor: query.cursor as string | undefined,
  }),
});
