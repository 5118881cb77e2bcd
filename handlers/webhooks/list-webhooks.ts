// GET /webhooks: the catalog's webhooks, oldest first, without their secrets.
import { listWebhooks as list } from '../../domain/webhooks/subscriptions.ts';
import type { Handler } from '../handler.ts';

export const listWebhooks: Handler<'listWebhooks'> = async ({ auth, query, em }) => ({
  status: 200,
  data: await list(em, auth.catalogId, { limit: query.limit ?? 50, cursor: query.cursor }),
});
