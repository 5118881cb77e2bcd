// POST /webhooks: subscribes an endpoint; the answer is the only place the new secret is shown.
import { createWebhook as create } from '../../domain/webhooks/subscriptions.ts';
import type { Handler } from '../handler.ts';
import { targetRules } from './rules.ts';

export const createWebhook: Handler<'createWebhook'> = async ({ auth, actor, body, em, services }) => {
  const data = await create(em, services.secrets, targetRules(services.config), auth.catalogId, body, actor);
  return { status: 201, data };
};
