// GET /items/{externalSystem}/{externalId}/stock-movements: newest first, with a cursor.
import { listMovements } from '../../domain/stock/movements.ts';
import { normalizeText } from '../../domain/items/payload.ts';
import type { Handler } from '../../platform/http/types.ts';

export const listStockMovements: Handler = async ({ em, auth, params, query }) => ({
  status: 200,
  data: await listMovements(em, auth.catalogId, normalizeText(params.externalSystem!), normalizeText(params.externalId!), {
    limit: (query.limit as number | undefined) ?? 50,
    cursor: query.cursor as string | undefined,
  }),
});
