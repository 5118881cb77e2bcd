// POST /webhooks: subscribes an endpoint; the answer is the only place the new secret is shown.
import type { CreateWebhookRequest } from '../../generated/client.ts';
import { createWebhook as create } from '../../domain/webhooks/subscriptions.ts';
import type { Handler } from '../../platform/http/types.ts';
import { targetRules } from './rules.ts';

export const createWebhook: Handler = async ({ auth, body, em, services }) => {
  const input = body as CreateWebhookRequest;
  const data = await create(em, targetRules(services.config), auth.catalogId, input);
  return { status: 201, data };
};
