// POST /webhooks/{id}/deliveries/{deliveryId}/retry: the same delivery, due now.
import { retryDelivery } from '../../domain/webhooks/deliveries.ts';
import type { Handler } from '../handler.ts';

export const retryWebhookDelivery: Handler<'retryWebhookDelivery'> = async ({ auth, actor, params, em }) => ({
  status: 202,
  data: await retryDelivery(em, auth.catalogId, params.id, params.deliveryId, actor),
});
