// POST /webhooks/{id}/recover: re-queues the failed deliveries created in a time window, and links to that window's events.
import type { RecoverWebhookRequest } from '../../generated/client.ts';
import { recoverDeliveries } from '../../domain/webhooks/deliveries.ts';
import { API_PREFIX } from '../../platform/http/contract.ts';
import type { Handler } from '../../platform/http/types.ts';

export const recoverWebhook: Handler = async ({ auth, params, body, em }) => {
  const window = body as RecoverWebhookRequest;
  const requeued = await recoverDeliveries(em, auth.catalogId, params.id!, window);
  const query = new URLSearchParams({ since: window.since, ...(window.until ? { until: window.until } : {}) });
  return { status: 202, data: { requeued, eventsUrl: `${API_PREFIX}/events?${query}` } };
};
