// The webhook subscription entity: a low-volume table read and changed through the entity manager (deliveries and the outbox are SQL-only).
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
    filter: p.json<object>().nullable(),
    // The filter compiled (jsonpath text); the fan-out alone reads it, in SQL.
    filterPath: p.text().columnType('jsonpath').nullable(),
    ordered: p.boolean().default(false),
    // The pace the owner set (deliveries a second, attempts in flight); the schedule's own state
    // (pace_at, paused_until, consecutive_429) is SQL-only, in delivery-store.ts.
    ratePerSecond: p.float().columnType('double precision').nullable(),
    maxInFlight: p.integer().nullable(),
    status: p.enum(['active', 'disabled'] as const),
    secret: p.text(),
    previousSecret: p.text().nullable(),
    previousSecretExpiresAt: p.datetime().nullable(),
    consecutiveFailures: p.integer(),
    lastSuccessAt: p.datetime().nullable(),
    disabledAt: p.datetime().nullable(),
    disabledNoticeSentAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Webhook = InferEntity<typeof Webhook>;
