// POST /webhooks/{id}/resume: active again, counter reset, paused deliveries due now.
import { resumeWebhook as resume } from '../../domain/webhooks/subscriptions.ts';
import type { Handler } from '../handler.ts';

export const resumeWebhook: Handler<'resumeWebhook'> = async ({ auth, actor, params, em }) => ({
  status: 200,
  data: await resume(em, auth.catalogId, params.id, actor),
});
