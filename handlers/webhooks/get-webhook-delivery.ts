// GET /webhooks/{id}/deliveries/{deliveryId}: one delivery with every attempt.
import { getDelivery } from '../../domain/webhooks/deliveries.ts';
import type { Handler } from '../../platform/http/types.ts';

export const getWebhookDelivery: Handler = async ({ auth, params, em }) => ({
  status: 200,
  data: await getDelivery(em, auth.catalogId, params.id!, params.deliveryId!),
});
