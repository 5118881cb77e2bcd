// POST /webhooks/{id}/test: queues a webhook.test event for this webhook only.
import { sendTestEvent } from '../../domain/webhooks/deliveries.ts';
import type { Handler } from '../handler.ts';

export const testWebhook: Handler<'testWebhook'> = async ({ auth, params, em, services }) => ({
  status: 202,
  data: await sendTestEvent(em, auth.catalogId, params.id, services.config.webhookRetryDelaysMs[0] ?? 0),
});
