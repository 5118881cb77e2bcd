// Entities of outbound delivery: webhooks, their deliveries and attempts, and the event outbox.
import { defineEntity, p } from '@mikro-orm/postgresql';
import type { InferEntity } from '@mikro-orm/postgresql';

export const Webhook = defineEntity({
  name: 'Webhook',
  tableName: 'webhooks',
  properties: {
    id: p.uuid().primary(),
    catalogId: p.uuid(),
    url: p.text(),
    events: p.array(),
    description: p.text().nullable(),
    ownerEmail: p.text().nullable(),
    status: p.enum(['active', 'disabled'] as const),
    secret: p.text(),
    previousSecret: p.text().nullable(),
    previousSecretExpiresAt: p.datetime().nullable(),
    consecutiveFailures: p.integer(),
    disabledAt: p.datetime().nullable(),
    disabledNoticeSentAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Webhook = InferEntity<typeof Webhook>;

export const WebhookDelivery = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  properties: {
    id: p.uuid().primary(),
    webhookId: p.uuid(),
    catalogId: p.uuid(),
    eventId: p.uuid(),
    eventType: p.text(),
    payload: p.text(),
    status: p.enum(['pending', 'succeeded', 'exhausted'] as const),
    attemptCount: p.integer(),
    nextAttemptAt: p.datetime().nullable(),
    lastStatusCode: p.integer().nullable(),
    lastError: p.text().nullable(),
    leaseToken: p.uuid().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type WebhookDelivery = InferEntity<typeof WebhookDelivery>;

export const WebhookAttempt = defineEntity({
  name: 'WebhookAttempt',
  tableName: 'webhook_attempts',
  properties: {
    id: p.bigint('number').primary(),
    deliveryId: p.uuid(),
    attemptNumber: p.integer(),
    startedAt: p.datetime(),
    statusCode: p.integer().nullable(),
    durationMs: p.integer(),
    error: p.text().nullable(),
    responseExcerpt: p.text().nullable(),
  },
});

export const OutboxMessage = defineEntity({
  name: 'OutboxMessage',
  tableName: 'outbox',
  properties: {
    id: p.bigint('number').primary(),
    eventId: p.uuid(),
    topic: p.text(),
    key: p.text(),
    payload: p.text(),
    headers: p.json<Record<string, string>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    sentAt: p.datetime().nullable(),
  },
});
