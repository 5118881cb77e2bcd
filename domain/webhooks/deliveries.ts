// The delivery log and the operator's levers on it: list, read with attempts, retry one, recover a window, send a test.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { DeliveryAttempt, DeliveryStatus, EventType, WebhookDelivery, WebhookDeliveryDetail } from '../../generated/client.ts';
import { domainEvent } from '../events/outbox.ts';
import { conflict, notFound, validationError } from '../../platform/errors.ts';
import { decodeCursor, encodeCursor } from '../pagination.ts';
import { DELIVERY_CHANNEL } from './delivery-queue.ts';
import { findWebhook } from './subscriptions.ts';

const RECOVERY_WINDOW_MS = 14 * 24 * 3600_000;

interface DeliveryRow {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempt_count: number;
  next_attempt_at: Date | string | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date | string;
  updated_at: Date | string;
  sort_key?: string;
}

interface AttemptRow {
  attempt_number: number;
  started_at: Date | string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  response_excerpt: string | null;
}

const DELIVERY_COLUMNS = `id, webhook_id, event_id, event_type, status, attempt_count, next_attempt_at,
  last_status_code, last_error, created_at, updated_at`;

const iso = (value: Date | string): string => (value instanceof Date ? value : new Date(value)).toISOString();

function deliveryView(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    eventType: row.event_type as EventType,
    status: row.status,
    attemptCount: row.attempt_count,
    nextAttemptAt: row.status === 'pending' && row.next_attempt_at !== null ? iso(row.next_attempt_at) : null,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

function attemptView(row: AttemptRow): DeliveryAttempt {
  return {
    attemptNumber: row.attempt_number,
    startedAt: iso(row.started_at),
    statusCode: row.status_code,
    durationMs: row.duration_ms,
    error: row.error,
    responseBodyExcerpt: row.response_excerpt,
  };
}

/** Newest first; `sort_key` keeps the database's microseconds so a page boundary never skips a row. */
export async function listDeliveries(
  em: EntityManager,
  catalogId: string,
  webhookId: string,
  page: { status?: DeliveryStatus | undefined; limit: number; cursor?: string | undefined },
): Promise<{ deliveries: WebhookDelivery[]; nextCursor: string | null }> {
  await findWebhook(em, catalogId, webhookId);
  const params: unknown[] = [webhookId];
  let where = 'webhook_id = ?';
  if (page.status !== undefined) {
    where += ' AND status = ?';
    params.push(page.status);
  }
  if (page.cursor !== undefined) {
    const after = decodeCursor(page.cursor);
    where += ' AND (created_at, id) < (?::timestamptz, ?::uuid)';
    params.push(after.at, after.id);
  }
  params.push(page.limit + 1);
  const rows = await em.execute<DeliveryRow[]>(
    `SELECT ${DELIVERY_COLUMNS}, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_key
       FROM webhook_deliveries WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ?`, params);
  const more = rows.length > page.limit;
  const shown = rows.slice(0, page.limit);
  const last = shown.at(-1);
  return {
    deliveries: shown.map(deliveryView),
    nextCursor: more && last ? encodeCursor({ at: last.sort_key!, id: last.id }) : null,
  };
}

export async function getDelivery(em: EntityManager, catalogId: string, webhookId: string, deliveryId: string): Promise<WebhookDeliveryDetail> {
  await findWebhook(em, catalogId, webhookId);
  const [row] = await em.execute<DeliveryRow[]>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = ? AND webhook_id = ?`, [deliveryId, webhookId]);
  if (!row) throw notFound('Delivery');
  const attempts = await em.execute<AttemptRow[]>(
    `SELECT attempt_number, started_at, status_code, duration_ms, error, response_excerpt
       FROM webhook_attempts WHERE delivery_id = ? ORDER BY attempt_number, id`, [deliveryId]);
  return { ...deliveryView(row), attempts: attempts.map(attemptView) };
}

async function activeWebhook(em: EntityManager, catalogId: string, webhookId: string): Promise<void> {
  const webhook = await findWebhook(em, catalogId, webhookId);
  if (webhook.status !== 'active') {
    throw conflict('The webhook is disabled; resume it first.', [{ path: 'status', message: 'is disabled' }]);
  }
}

/**
 * Due now, whatever its status. A pending automatic attempt is replaced (one row, one schedule);
 * an attempt in flight keeps running but can no longer settle the delivery (its lease token is
 * cleared), so the manual retry is never swallowed.
 */
export async function retryDelivery(em: EntityManager, catalogId: string, webhookId: string, deliveryId: string): Promise<WebhookDelivery> {
  await activeWebhook(em, catalogId, webhookId);
  const [row] = await em.execute<DeliveryRow[]>(
    `WITH requeued AS (
       UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), lease_token = NULL, updated_at = now()
        WHERE id = ? AND webhook_id = ? RETURNING ${DELIVERY_COLUMNS})
     SELECT requeued.*, pg_notify(?, '') FROM requeued`, [deliveryId, webhookId, DELIVERY_CHANNEL]);
  if (!row) throw notFound('Delivery');
  return deliveryView(row);
}

/** Checks a recovery window: at most 14 days back, `since` before `until` (default now). */
export function recoveryWindow(since: string, until: string | undefined, now = Date.now()): { since: Date; until: Date } {
  const from = new Date(since);
  const to = until === undefined ? new Date(now) : new Date(until);
  if (from.getTime() < now - RECOVERY_WINDOW_MS) throw validationError([{ path: 'since', message: 'must be at most 14 days ago' }]);
  if (from.getTime() >= to.getTime()) throw validationError([{ path: 'until', message: 'must be after since' }]);
  return { since: from, until: to };
}

/**
 * Re-queues the webhook's failed deliveries created in [since, until): exhausted ones, and pending
 * ones that already failed and are waiting (not in flight) for their next automatic attempt.
 */
export async function recoverDeliveries(
  em: EntityManager, catalogId: string, webhookId: string, window: { since: string; until?: string | undefined },
): Promise<number> {
  const { since, until } = recoveryWindow(window.since, window.until);
  await activeWebhook(em, catalogId, webhookId);
  const [result] = await em.execute<Array<{ requeued: string | number }>>(
    `WITH requeued AS (
       UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), lease_token = NULL, updated_at = now()
        WHERE webhook_id = ? AND created_at >= ? AND created_at < ?
          AND (status = 'exhausted' OR (status = 'pending' AND attempt_count > 0 AND lease_token IS NULL))
        RETURNING 1)
     SELECT count(*) AS requeued, pg_notify(?, '') FROM requeued`, [webhookId, since, until, DELIVERY_CHANNEL]);
  return Number(result?.requeued ?? 0);
}

/** A `webhook.test` event for this webhook only, delivered and retried like any other. */
export async function sendTestEvent(
  em: EntityManager, catalogId: string, webhookId: string, firstDelayMs: number,
): Promise<{ deliveryId: string; eventId: string }> {
  await activeWebhook(em, catalogId, webhookId);
  const event = domainEvent({
    type: 'webhook.test',
    catalogId,
    resourceId: webhookId,
    data: { webhookId, message: 'This is a test event from the Catalog Service.' },
  });
  const [row] = await em.execute<Array<{ id: string }>>(
    `WITH created AS (
       INSERT INTO webhook_deliveries (id, webhook_id, catalog_id, event_id, event_type, payload, status, attempt_count, next_attempt_at)
       VALUES (gen_random_uuid(), ?, ?, ?, ?, ?, 'pending', 0, now() + ? * interval '1 millisecond') RETURNING id)
     SELECT created.id, pg_notify(?, '') FROM created`,
    [webhookId, catalogId, event.id, event.type, JSON.stringify(event), firstDelayMs, DELIVERY_CHANNEL]);
  return { deliveryId: row!.id, eventId: event.id };
}
