// POST /items/{externalSystem}/{externalId}/stock-movements: 201 with the movement and the new on-hand.
import { recordMovement } from '../../domain/stock/movements.ts';
import { normalizeText } from '../../domain/items/payload.ts';
import { requestSource } from '../../domain/items/version-source.ts';
import type { Handler } from '../handler.ts';

export const createStockMovement: Handler<'createStockMovement'> = async ({ em, auth, params, body, requestId, headers }) => ({
  status: 201,
  data: await recordMovement(em, auth.catalogId, normalizeText(params.externalSystem), normalizeText(params.externalId), body,
    requestSource(auth.keyId, requestId, headers)),
});
