// POST /webhooks/{id}/recover: re-queues the failed deliveries created in a time window.
import type { RecoverWebhookRequest } from '../../generated/client.ts';
import { recoverDeliveries } from '../../domain/webhooks/deliveries.ts';
import type { Handler } from '../../platform/http/types.ts';

export const recoverWebhook: Handler = async ({ auth, params, body, em }) => ({
  status: 202,
  data: { requeued: await recoverDeliveries(em, auth.catalogId, params.id!, body as RecoverWebhookRequest) },
});
