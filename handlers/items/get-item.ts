// GET /items/{externalSystem}/{externalId}: one item of the key's catalog.
import { getItem as readItem } from '../../domain/items/read.ts';
import { normalizeText } from '../../domain/items/payload.ts';
import type { Handler } from '../../platform/http/types.ts';

export const getItem: Handler = async ({ em, auth, params }) => ({
  status: 200,
  data: await readItem(em, auth.catalogId, normalizeText(params.externalSystem!), normalizeText(params.externalId!)),
});
