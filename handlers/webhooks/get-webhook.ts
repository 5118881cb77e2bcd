// GET /webhooks/{id}: one webhook, without its secret.
import { findWebhook, webhookView } from '../../domain/webhooks/subscriptions.ts';
import type { Handler } from '../handler.ts';

export const getWebhook: Handler<'getWebhook'> = async ({ auth, params, em }) => ({
  status: 200,
  data: webhookView(await findWebhook(em, auth.catalogId, params.id)),
});
