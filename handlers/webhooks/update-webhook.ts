// PATCH /webhooks/{id}: a new address, event list, description or pace under the same rules as creation.
import { updateWebhook as update } from '../../domain/webhooks/subscriptions.ts';
import type { Handler } from '../handler.ts';
import { targetRules } from './rules.ts';

export const updateWebhook: Handler<'updateWebhook'> = async ({ auth, actor, params, body, em, services }) => ({
  status: 200,
  data: await update(em, targetRules(services.config), auth.catalogId, params.id, body, actor),
});
