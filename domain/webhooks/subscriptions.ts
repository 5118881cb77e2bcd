// Webhook subscriptions: create, read, change, delete, rotate the secret, resume after disabling.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EventSubscription, Webhook as WebhookView, WebhookCreated } from '../../generated/client.ts';
import { Webhook } from '../../platform/db/entities/webhooks.ts';
import { newId } from '../../platform/ids.ts';
import { notFound, validationError } from '../../platform/errors.ts';
import { decodeCursor, encodeCursor } from '../pagination.ts';
import { DELIVERY_CHANNEL } from './delivery-queue.ts';
import { ROTATION_OVERLAP_MS, newSecret } from './signing.ts';
import { checkTargetUrl } from './target-url.ts';
import type { TargetRules } from './target-url.ts';

export interface WebhookInput {
  readonly url: string;
  readonly events: readonly string[];
  readonly description?: string | null;
  readonly ownerEmail?: string;
}

export type WebhookPatch = Partial<Pick<WebhookInput, 'url' | 'events' | 'description'>>;

/** The wire shape; the secrets never leave through it. */
export function webhookView(webhook: Webhook): WebhookView {
  return {
    id: webhook.id,
    url: webhook.url,
    events: [...webhook.events] as EventSubscription[],
    description: webhook.description ?? null,
    ownerEmail: webhook.ownerEmail ?? null,
    status: webhook.status,
    consecutiveFailures: webhook.consecutiveFailures,
    disabledAt: webhook.disabledAt?.toISOString() ?? null,
    createdAt: webhook.createdAt.toISOString(),
    updatedAt: webhook.updatedAt.toISOString(),
  };
}

/** `*` means every type and then stands alone (the contract's EventSubscription). */
function checkEvents(events: readonly string[]): string[] {
  if (events.includes('*') && events.length > 1) {
    throw validationError([{ path: 'events', message: "'*' subscribes to every event and must be the only entry" }]);
  }
  return [...events];
}

/** The catalog's webhook, or a 404 (also for another catalog's webhook: ids do not leak across tenants). */
export async function findWebhook(em: EntityManager, catalogId: string, id: string): Promise<Webhook> {
  const webhook = await em.findOne(Webhook, { id, catalogId });
  if (!webhook) throw notFound('Webhook');
  return webhook;
}

export async function createWebhook(em: EntityManager, rules: TargetRules, catalogId: string, input: WebhookInput): Promise<WebhookCreated> {
  const events = checkEvents(input.events);
  const url = await checkTargetUrl(input.url, rules);
  const now = new Date();
  const webhook = em.create(Webhook, {
    id: newId(),
    catalogId,
    url,
    events,
    description: input.description ?? null,
    ownerEmail: input.ownerEmail ?? null,
    status: 'active',
    secret: newSecret(),
    previousSecret: null,
    previousSecretExpiresAt: null,
    consecutiveFailures: 0,
    disabledAt: null,
    disabledNoticeSentAt: null,
    createdAt: now,
    updatedAt: now,
  });
  await em.flush();
  return { ...webhookView(webhook), secret: webhook.secret };
}

export async function listWebhooks(
  em: EntityManager,
  catalogId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<{ webhooks: WebhookView[]; nextCursor: string | null }> {
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor);
  const where = after
    ? { catalogId, $or: [{ createdAt: { $gt: new Date(after.at) } }, { createdAt: new Date(after.at), id: { $gt: after.id } }] }
    : { catalogId };
  const rows = await em.find(Webhook, where, { orderBy: { createdAt: 'asc', id: 'asc' }, limit: page.limit + 1 });
  const more = rows.length > page.limit;
  const shown = rows.slice(0, page.limit);
  const last = shown.at(-1);
  return {
    webhooks: shown.map(webhookView),
    nextCursor: more && last ? encodeCursor({ at: last.createdAt.toISOString(), id: last.id }) : null,
  };
}

export async function updateWebhook(em: EntityManager, rules: TargetRules, catalogId: string, id: string, patch: WebhookPatch): Promise<WebhookView> {
  const webhook = await findWebhook(em, catalogId, id);
  if (patch.events !== undefined) webhook.events = checkEvents(patch.events);
  if (patch.url !== undefined) webhook.url = await checkTargetUrl(patch.url, rules);
  if (patch.description !== undefined) webhook.description = patch.description;
  webhook.updatedAt = new Date();
  await em.flush();
  return webhookView(webhook);
}

/** Deletes the webhook; its deliveries and their attempts go with it (ON DELETE CASCADE). */
export async function deleteWebhook(em: EntityManager, catalogId: string, id: string): Promise<void> {
  const deleted = await em.nativeDelete(Webhook, { id, catalogId });
  if (deleted === 0) throw notFound('Webhook');
}

/** A new secret; the one it replaces keeps signing beside it for 24 h (two `v1=` entries). */
export async function rotateSecret(em: EntityManager, catalogId: string, id: string): Promise<{ secret: string; previousSecretExpiresAt: string }> {
  const webhook = await findWebhook(em, catalogId, id);
  const now = new Date();
  webhook.previousSecret = webhook.secret;
  webhook.previousSecretExpiresAt = new Date(now.getTime() + ROTATION_OVERLAP_MS);
  webhook.secret = newSecret();
  webhook.updatedAt = now;
  await em.flush();
  return { secret: webhook.secret, previousSecretExpiresAt: webhook.previousSecretExpiresAt.toISOString() };
}

/**
 * Active again with a zero counter; the deliveries paused while it was disabled become due now.
 * Resuming an active webhook changes nothing.
 */
export async function resumeWebhook(em: EntityManager, catalogId: string, id: string): Promise<WebhookView> {
  return em.transactional(async (tx) => {
    const webhook = await findWebhook(tx, catalogId, id);
    if (webhook.status === 'active') return webhookView(webhook);
    webhook.status = 'active';
    webhook.consecutiveFailures = 0;
    webhook.disabledAt = null;
    webhook.disabledNoticeSentAt = null;
    webhook.updatedAt = new Date();
    await tx.flush();
    await tx.execute(
      `UPDATE webhook_deliveries SET next_attempt_at = now(), updated_at = now()
        WHERE webhook_id = ? AND status = 'pending' AND next_attempt_at IS NULL`, [id]);
    await tx.execute(`SELECT pg_notify(?, '')`, [DELIVERY_CHANNEL]);
    return webhookView(webhook);
  });
}
