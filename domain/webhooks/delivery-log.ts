// The delivery log as the API reads it (a webhook's deliveries and their attempts), and the retries it starts.
import type { DeliveryAttempt, DeliveryStatus, EventType, WebhookDelivery } from '../../generated/client.ts';
import { query, sql } from '../../platform/db/sql.ts';
import type { Db, Timestamp } from '../../platform/db/sql.ts';
import { afterCursor, encodeCursor, keysetPage } from '../pagination.ts';
import { DELIVERY_CHANNEL, iso } from './delivery-store.ts';

interface DeliveryRow {
  id: string; webhook_id: string; event_id: string; event_type: string; status: DeliveryStatus; attempt_count: number;
  next_attempt_at: Timestamp | null; last_status_code: number | null; last_error: string | null; created_at: Timestamp; updated_at: Timestamp;
}

const DELIVERY_COLUMNS = `id, webhook_id, event_id, event_type, status, attempt_count, next_attempt_at,
  last_status_code, last_error, created_at, updated_at`;

const deliveryView = (row: DeliveryRow): WebhookDelivery => ({
  id: row.id, webhookId: row.webhook_id, eventId: row.event_id, eventType: row.event_type as EventType, status: row.status,
  attemptCount: row.attempt_count,
  nextAttemptAt: row.status === 'pending' && row.next_attempt_at !== null ? iso(row.next_attempt_at) : null,
  lastStatusCode: row.last_status_code, lastError: row.last_error, createdAt: iso(row.created_at), updatedAt: iso(row.updated_at),
});

/** A page of the webhook's log, newest first; the cursor keeps the database's microseconds so a page boundary never skips a row. */
export async function deliveryPage(
  db: Db, webhookId: string, page: { status?: DeliveryStatus | undefined; limit: number; cursor?: string | undefined },
): Promise<{ deliveries: WebhookDelivery[]; nextCursor: string | null }> {
  const rows = await query<DeliveryRow & { sort_key: string }>(db, sql`
    SELECT ${sql.raw(DELIVERY_COLUMNS)}, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_key
      FROM webhook_deliveries WHERE webhook_id = ${webhookId}
      ${page.status === undefined ? sql`` : sql`AND status = ${page.status}`}
      ${page.cursor === undefined ? sql`` : sql`AND ${afterCursor(page.cursor, sql`created_at, id`, 'desc')}`}
     ORDER BY created_at DESC, id DESC LIMIT ${page.limit + 1}`);
  const cut = keysetPage(rows, page.limit, (last) => encodeCursor({ at: last.sort_key, id: last.id }));
  return { deliveries: cut.rows.map(deliveryView), nextCursor: cut.nextCursor };
}

/** One delivery of the webhook with its attempts, or undefined. */
export async function findDelivery(db: Db, webhookId: string, deliveryId: string): Promise<(WebhookDelivery & { body: string; attempts: DeliveryAttempt[] }) | undefined> {
  const [row] = await query<DeliveryRow & { payload: string }>(db,
    `SELECT ${DELIVERY_COLUMNS}, payload FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2`, [deliveryId, webhookId]);
  if (!row) return undefined;
  const attempts = await query<{
    attempt_number: number; started_at: Timestamp; status_code: number | null; duration_ms: number; error: string | null; response_excerpt: string | null; throttled: boolean;
  }>(db, `SELECT attempt_number, started_at, status_code, duration_ms, error, response_excerpt, throttled
       FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt_number, id`, [deliveryId]);
  return {
    ...deliveryView(row),
    body: row.payload,
    attempts: attempts.map((a) => ({
      attemptNumber: a.attempt_number, startedAt: iso(a.started_at), statusCode: a.status_code,
      durationMs: a.duration_ms, error: a.error, responseBodyExcerpt: a.response_excerpt, throttled: a.throttled,
    })),
  };
}

/**
 * Due now, whatever its status. A pending automatic attempt is replaced (one row, one schedule);
 * an attempt in flight keeps running but can no longer settle the delivery (its lease token is
 * cleared), so the manual retry is never swallowed.
 */
export async function requeueDelivery(db: Db, webhookId: string, deliveryId: string): Promise<WebhookDelivery | undefined> {
  const [row] = await query<DeliveryRow>(db, `WITH requeued AS (
       UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), lease_token = NULL, updated_at = now()
        WHERE id = $1 AND webhook_id = $2 RETURNING ${DELIVERY_COLUMNS})
     SELECT requeued.*, pg_notify($3, '') FROM requeued`, [deliveryId, webhookId, DELIVERY_CHANNEL]);
  return row && deliveryView(row);
}

/**
 * Re-queues the webhook's failed deliveries created in [since, until): exhausted ones, and pending
 * ones that already failed and are waiting (not in flight) for their next automatic attempt.
 */
export async function requeueFailed(db: Db, webhookId: string, since: Date, until: Date): Promise<number> {
  const [row] = await query<{ requeued: string }>(db, `WITH requeued AS (
       UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), lease_token = NULL, updated_at = now()
        WHERE webhook_id = $1 AND created_at >= $2 AND created_at < $3
          AND (status = 'exhausted' OR (status = 'pending' AND attempt_count > 0 AND lease_token IS NULL))
        RETURNING 1)
     SELECT count(*) AS requeued, pg_notify($4, '') FROM requeued`, [webhookId, since, until, DELIVERY_CHANNEL]);
  return Number(row?.requeued ?? 0);
}
