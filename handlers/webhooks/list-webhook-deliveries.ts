// GET /webhooks/{id}/deliveries: the delivery log, newest first, optionally one status.
import { listDeliveries } from '../../domain/webhooks/deliveries.ts';
import type { Handler } from '../handler.ts';

export const listWebhookDeliveries: Handler<'listWebhookDeliveries'> = async ({ auth, params, query, em }) => ({
  status: 200,
  data: await listDeliveries(em, auth.catalogId, params.id, {
    status: query.status,
    limit: query.limit ?? 50,
    cursor: query.cursor,
  }),
});
