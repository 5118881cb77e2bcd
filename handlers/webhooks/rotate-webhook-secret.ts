// POST /webhooks/{id}/rotate-secret: a new secret; the previous one keeps signing beside it for 24 h.
import { rotateSecret } from '../../domain/webhooks/subscriptions.ts';
import type { Handler } from '../handler.ts';

export const rotateWebhookSecret: Handler<'rotateWebhookSecret'> = async ({ auth, actor, params, em, services }) => ({
  status: 200,
  data: await rotateSecret(em, services.secrets, auth.catalogId, params.id, actor),
});
