// GET /webhooks/{id}/deliveries/{deliveryId}: one delivery with the body it POSTs, its attempts and a link to its event.
import { getDelivery } from '../../domain/webhooks/deliveries.ts';
import { API_PREFIX } from '../../platform/http/contract.ts';
import type { Handler } from '../handler.ts';

export const getWebhookDelivery: Handler<'getWebhookDelivery'> = async ({ auth, params, em }) => {
  const delivery = await getDelivery(em, auth.catalogId, params.id, params.deliveryId);
  // A test ping goes to one webhook and is no catalog event: it is not in the event log.
  const eventUrl = delivery.eventType === 'webhook.test' ? null : `${API_PREFIX}/events/${delivery.eventId}`;
  return { status: 200, data: { ...delivery, eventUrl } };
};
