// GET /webhooks/{id}: one webhook with its backlog, without its secret.
import { getWebhook as get } from '../../domain/webhooks/subscriptions.ts';
import type { Handler } from '../handler.ts';

export const getWebhook: Handler<'getWebhook'> = async ({ auth, params, em }) => ({
  status: 200,
  data: await get(em, auth.catalogId, params.id),
});
