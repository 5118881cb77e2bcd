// POST /webhooks/{id}/recover: re-queues the failed deliveries created in a time window, and links to that window's events.
import { recoverDeliveries } from '../../domain/webhooks/deliveries.ts';
import { API_PREFIX } from '../../platform/http/contract.ts';
import type { Handler } from '../handler.ts';

export const recoverWebhook: Handler<'recoverWebhook'> = async ({ auth, actor, params, body: window, em }) => {
  const requeued = await recoverDeliveries(em, auth.catalogId, params.id, window, actor);
  const query = new URLSearchParams({ since: window.since, ...(window.until ? { until: window.until } : {}) });
  return { status: 202, data: { requeued, eventsUrl: `${API_PREFIX}/events?${query}` } };
};
