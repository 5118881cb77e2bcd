// DELETE /webhooks/{id}: removes the webhook with its deliveries; a repeat is a 404.
import { deleteWebhook as remove } from '../../domain/webhooks/subscriptions.ts';
import type { Handler } from '../handler.ts';

export const deleteWebhook: Handler<'deleteWebhook'> = async ({ auth, actor, params, em }) => {
  await remove(em, auth.catalogId, params.id, actor);
  return { status: 200, data: { deleted: true, id: params.id } };
};
