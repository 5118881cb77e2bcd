// The delivery log and the operator's levers on it: list, read with attempts, retry one, recover a window, send a test.
import type { DeliveryStatus, WebhookDelivery, WebhookDeliveryDetail } from '../../generated/client.ts';
import type { Actor } from '../../platform/actor.ts';
import type { Db } from '../../platform/db/sql.ts';
import { conflict, notFound, validationError } from '../../platform/errors.ts';
import { recordAudit } from '../audit/audit-log.ts';
import { domainEvent } from '../events/outbox.ts';
import { deliveryPage, findDelivery, requeueDelivery, requeueFailed } from './delivery-log.ts';
import { insertDelivery } from './delivery-store.ts';
import { findWebhook } from './subscriptions.ts';
import { productErrorOf } from '../../platform/db/pg-errors.ts';

const RECOVERY_WINDOW_MS = 14 * 24 * 3600_000;

/** Newest first, optionally one status. */
export async function listDeliveries(
  db: Db,
  catalogId: string,
  webhookId: string,
  page: { status?: DeliveryStatus | undefined; limit: number; cursor?: string | undefined },
): Promise<{ deliveries: WebhookDelivery[]; nextCursor: string | null }> {
  await findWebhook(db, catalogId, webhookId);
  return deliveryPage(db, webhookId, page);
}

/** The delivery with its body and attempts; the door adds the link to its event. */
export async function getDelivery(db: Db, catalogId: string, webhookId: string, deliveryId: string): Promise<Omit<WebhookDeliveryDetail, 'eventUrl'>> {
  await findWebhook(db, catalogId, webhookId);
  const delivery = await findDelivery(db, webhookId, deliveryId);
  if (!delivery) throw notFound('Delivery');
  return delivery;
}

async function activeWebhook(db: Db, catalogId: string, webhookId: string): Promise<void> {
  const webhook = await findWebhook(db, catalogId, webhookId);
  if (webhook.status !== 'active') {
    throw conflict('The webhook is disabled; resume it first.', [{ path: 'status', message: 'is disabled' }]);
  }
}

/** Due now, whatever its status (see `requeueDelivery`). */
export async function retryDelivery(db: Db, catalogId: string, webhookId: string, deliveryId: string, actor: Actor): Promise<WebhookDelivery> {
  await activeWebhook(db, catalogId, webhookId);
  return db.transactional(async (tx) => {
    const delivery = await requeueDelivery(tx, webhookId, deliveryId);
    if (!delivery) throw notFound('Delivery');
    await recordAudit(tx, actor, {
      catalogId, action: 'webhook_delivery.retried', resourceType: 'webhook_delivery', resourceId: deliveryId,
      before: null, after: { webhookId, eventId: delivery.eventId, status: delivery.status },
    });
    return delivery;
  });
}

/** Checks a recovery window: at most 14 days back, `since` before `until` (default now). */
export function recoveryWindow(since: string, until: string | undefined, now = Date.now()): { since: Date; until: Date } {
  const from = new Date(since);
  const to = until === undefined ? new Date(now) : new Date(until);
  if (from.getTime() < now - RECOVERY_WINDOW_MS) throw validationError([{ path: 'since', message: 'must be at most 14 days ago' }]);
  if (from.getTime() >= to.getTime()) throw validationError([{ path: 'until', message: 'must be after since' }]);
  return { since: from, until: to };
}

/** Re-queues the webhook's failed deliveries created in the window (see `requeueFailed`). */
export async function recoverDeliveries(
  db: Db, catalogId: string, webhookId: string, window: { since: string; until?: string | undefined }, actor: Actor,
): Promise<number> {
  const { since, until } = recoveryWindow(window.since, window.until);
  await activeWebhook(db, catalogId, webhookId);
  return db.transactional(async (tx) => {
    const requeued = await requeueFailed(tx, webhookId, since, until);
    await recordAudit(tx, actor, {
      catalogId, action: 'webhook.recovered', resourceType: 'webhook', resourceId: webhookId,
      before: null, after: { since: since.toISOString(), until: until.toISOString(), requeued },
    });
    return requeued;
  });
}

/** A `webhook.test` event for this webhook only, delivered and retried like any other. */
export async function sendTestEvent(
  db: Db, catalogId: string, webhookId: string, firstDelayMs: number,
): Promise<{ deliveryId: string; eventId: string }> {
  await activeWebhook(db, catalogId, webhookId);
  const event = domainEvent({
    type: 'webhook.test',
    catalogId,
    resourceId: webhookId,
    data: { webhookId, message: 'This is a test event from the Catalog Service.' },
  });
  let deliveryId: string;
  try {
    deliveryId = await insertDelivery(db, {
      webhookId, catalogId, eventId: event.id, eventType: event.type, payload: JSON.stringify(event), delayMs: firstDelayMs,
    });
  } catch (error) {
    // Deleted by a request running beside this one, after the check above: as absent as before it.
    throw productErrorOf(error, { foreign_key_violation: () => notFound('Webhook') }) ?? error;
  }
  return { deliveryId, eventId: event.id };
}
