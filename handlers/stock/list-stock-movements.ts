// GET /items/{externalSystem}/{externalId}/stock-movements: newest first, with a cursor.
import { listMovements } from '../../domain/stock/movements.ts';
import { normalizeText } from '../../domain/items/payload.ts';
import type { Handler } from '../handler.ts';

export const listStockMovements: Handler<'listStockMovements'> = async ({ em, auth, params, query }) => ({
  status: 200,
  data: await listMovements(em, auth.catalogId, normalizeText(params.externalSystem), normalizeText(params.externalId), {
    limit: query.limit ?? 50,
    cursor: query.cursor,
  }),
});
