// The delivery store: the schedule's statements on webhook_deliveries and webhook_attempts (inserts, claims, settlements); the log's are in delivery-log.ts.
// Raw SQL on purpose: the schedule's statements run once per batch on the hot path and lean on
// unnest arrays, FOR UPDATE SKIP LOCKED and data-modifying CTEs that an ORM would split up.
import { SecretKeyError } from '../../platform/crypto/secret-box.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import { query } from '../../platform/db/sql.ts';
import type { Db, Timestamp } from '../../platform/db/sql.ts';
import { NOT_HELD_BACK } from './ordered-deliveries.ts';
import { ADMITTED, CAPPED, ENDPOINT_OPEN, LEASABLE_AT_ONCE, PACED, RETRY_SLOTS, SLOT, takeSlots } from './pacing.ts';
import type { HeldBack } from './pacing.ts';
import type { AttemptOutcome } from './send-delivery.ts';
import { previousSecretContext, secretContext } from './signing.ts';
import type { SigningSecrets } from './signing.ts';

/** Channel the dispatcher LISTENs on: a delivery became due now. */
export const DELIVERY_CHANNEL = 'webhook_deliveries';
/** What an attempt whose worker died shows in the log. */
export const LOST_ATTEMPT = 'no outcome: the worker stopped during the attempt';

/** A delivery leased to this worker, with what it needs to sign and send it. */
export interface ClaimedDelivery {
  readonly id: string;
  readonly webhookId: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly payload: string;
  /** Including the attempt just claimed. */
  readonly attemptCount: number;
  readonly leaseToken: string;
  readonly url: string;
  /** The webhook's secrets, opened; or why they cannot be (their key is not configured here): then nothing is sent. */
  readonly signing: SigningSecrets | SecretKeyError;
  /** The trace context of the event it delivers: each attempt is a span in it. */
  readonly traceparent: string | null;
  /** Delivered in order per resource (ordered-deliveries.ts): settling it may let the next one go. */
  readonly ordered?: boolean;
  /**
   * Its webhook's rate: sent `sendInMs` after the claim, at the earliest, and spaced in this
   * process too; `lateMs`, how long after its slot that is (pacing.ts, `catchUp`).
   */
  readonly pace?: { readonly perSecond: number; readonly sendInMs: number; readonly lateMs: number };
}

const toDate = (value: Timestamp): Date => (value instanceof Date ? value : new Date(value));
export const iso = (value: Timestamp): string => toDate(value).toISOString();

interface TargetRow { webhook_id: string; url: string; secret: string; previous_secret: string | null; previous_secret_expires_at: Timestamp | null }

/** Where a claimed delivery goes, its secrets opened in memory for the attempt alone. */
function target(secrets: SecretBox, row: TargetRow): Pick<ClaimedDelivery, 'url' | 'signing'> {
  const previousSecretExpiresAt = row.previous_secret_expires_at === null ? null : toDate(row.previous_secret_expires_at);
  try {
    // An expired previous secret signs nothing: it is not opened (its key may be gone since).
    const previousLive = row.previous_secret !== null && previousSecretExpiresAt !== null && previousSecretExpiresAt.getTime() > Date.now();
    return {
      url: row.url,
      signing: {
        secret: secrets.open(row.secret, secretContext(row.webhook_id)),
        previousSecret: previousLive ? secrets.open(row.previous_secret!, previousSecretContext(row.webhook_id)) : null,
        previousSecretExpiresAt,
      },
    };
  } catch (error) {
    if (error instanceof SecretKeyError) return { url: row.url, signing: error };
    throw error;
  }
}

/** Wakes every dispatcher (delivered at commit when called in a transaction). */
export async function notifyDue(db: Db): Promise<void> {
  await query(db, 'SELECT pg_notify($1, $2)', [DELIVERY_CHANNEL, '']);
}

export interface NewDeliveries {
  readonly events: ReadonlyArray<{ id: string; catalogId: string; type: string; createdAt: string; payload: string; traceparent?: string; key?: string | undefined; offset?: string | undefined }>;
  /** How many of the new rows are born leased (attempt 1) with `leaseToken`, due again after `leaseMs`. */
  readonly leased: number;
  readonly leaseToken: string;
  readonly leaseMs: number;
  readonly firstDelayMs: number;
}

/**
 * One delivery per active webhook of the event's own catalog that subscribes to its type (or
 * `*`), whose filter (if any) accepts it and which existed when the event happened; a re-read event creates nothing twice (the
 * (webhook, event) pair is unique). A paced webhook's deliveries are due at their slots (pacing.ts),
 * and neither they nor a capped webhook's are born leased. Returns the rows created, the leased
 * ones with their target.
 */
export async function insertDeliveries(db: Db, secrets: SecretBox, batch: NewDeliveries): Promise<{ created: number; leased: ClaimedDelivery[] }> {
  const { events } = batch;
  const rows = await query<TargetRow & { id: string; event_id: string; leased: boolean }>(db,
    `WITH e AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[]) WITH ORDINALITY
         AS e(event_id, catalog_id, event_type, created_at, ord)),
     matched AS (
       SELECT w.id AS webhook_id, w.catalog_id, e.event_id, e.event_type, e.ord, w.ordered AND ($11::text[])[e.ord::int] IS NOT NULL AS ordered,
              w.rate_per_second IS NOT NULL AS paced, row_number() OVER (PARTITION BY w.id ORDER BY e.ord) - 1 AS k,
              row_number() OVER (ORDER BY e.ord, w.id) <= $6::int AND NOT w.ordered AND ${LEASABLE_AT_ONCE} AS leased
         FROM e JOIN webhooks w ON w.catalog_id = e.catalog_id AND w.status = 'active' AND w.created_at <= e.created_at
                 AND (w.events @> ARRAY['*'] OR w.events @> ARRAY[e.event_type])
                 AND (w.filter_path IS NULL OR coalesce(($5::text[])[e.ord::int]::jsonb @@ w.filter_path, false))),
     ${takeSlots('$9::int')},
     created AS (
       INSERT INTO webhook_deliveries (id, webhook_id, catalog_id, event_id, event_type, payload, status, attempt_count, lease_token, next_attempt_at, traceparent, resource_key, resource_seq)
       SELECT catalog_uuid_v7(), m.webhook_id, m.catalog_id, m.event_id, m.event_type, ($5::text[])[m.ord::int], 'pending',
              CASE WHEN m.leased THEN 1 ELSE 0 END,
              CASE WHEN m.leased THEN $7::uuid END,
              coalesce(${SLOT}, now() + CASE WHEN m.leased THEN $8::int ELSE $9::int END * interval '1 millisecond'), ($10::text[])[m.ord::int],
              CASE WHEN m.ordered THEN ($11::text[])[m.ord::int] END, CASE WHEN m.ordered THEN ($12::bigint[])[m.ord::int] END
         FROM matched m LEFT JOIN pace p ON p.id = m.webhook_id
       ON CONFLICT (webhook_id, event_id) DO NOTHING
       RETURNING id, webhook_id, event_id, lease_token IS NOT NULL AS leased)
     SELECT c.id, c.webhook_id, c.event_id, c.leased, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at
       FROM created c JOIN webhooks w ON w.id = c.webhook_id`,
    [events.map((e) => e.id), events.map((e) => e.catalogId), events.map((e) => e.type), events.map((e) => e.createdAt),
      events.map((e) => e.payload), batch.leased, batch.leaseToken, batch.leaseMs, batch.firstDelayMs, events.map((e) => e.traceparent ?? null),
      events.map((e) => e.key ?? null), events.map((e) => e.offset ?? null)]);
  const byId = new Map(events.map((e) => [e.id, e]));
  const leased = rows.filter((r) => r.leased).map((r): ClaimedDelivery => {
    const event = byId.get(r.event_id)!;
    return {
      id: r.id, webhookId: r.webhook_id, eventId: event.id, eventType: event.type, payload: event.payload,
      attemptCount: 1, leaseToken: batch.leaseToken, traceparent: event.traceparent ?? null, ...target(secrets, r),
    };
  });
  return { created: rows.length, leased };
}

/**
 * Claims up to `limit` due deliveries of active webhooks. Each gets a lease: next_attempt_at moves
 * to the lease's end, so a worker that dies mid-attempt leaves a row that simply falls due again;
 * the next claim finds the old lease token and logs that attempt as lost. A paced webhook's come
 * with their send times (pacing.ts, PACED).
 */
export async function claimDue(
  db: Db, secrets: SecretBox, options: { limit: number; leaseMs: number; leaseToken: string; skipWebhooks: readonly string[] },
): Promise<ClaimedDelivery[]> {
  const rows = await query<TargetRow & {
    id: string; event_id: string; event_type: string; payload: string; attempt_count: number; traceparent: string | null; ordered: boolean;
    rate: number | null; send_in_ms: number | null; late_ms: number | null;
  }>(db,
    // Walks the due index in order and stops at the limit: no condition on another table here,
    // or the planner joins first and sorts every due row (the paused and full webhooks are one
    // array, computed once before the walk).
    `WITH ${CAPPED},
     ${PACED},
     due AS (
       SELECT d.id, d.webhook_id, d.lease_token IS NOT NULL AS lost, d.next_attempt_at AS lease_end FROM webhook_deliveries d
        WHERE d.status = 'pending' AND d.next_attempt_at <= now()
          AND NOT (d.webhook_id = ANY($2::uuid[])) AND ${ENDPOINT_OPEN} AND ${NOT_HELD_BACK}
        ORDER BY d.next_attempt_at
        LIMIT $1
        FOR UPDATE OF d SKIP LOCKED),
     ${ADMITTED},
     target AS (
       SELECT admitted.*, w.status = 'active' AS active FROM admitted JOIN webhooks w ON w.id = admitted.webhook_id),
     -- A delivery of a webhook disabled in a race with its scheduling pauses instead (until resumed).
     paused AS (
       UPDATE webhook_deliveries d SET next_attempt_at = NULL, lease_token = NULL, updated_at = now()
         FROM target t WHERE d.id = t.id AND NOT t.active),
     claimed AS (
       UPDATE webhook_deliveries d
          SET attempt_count = d.attempt_count + 1, lease_token = $3,
              next_attempt_at = now() + $4 * interval '1 millisecond', updated_at = now()
         FROM target t WHERE d.id = t.id AND t.active
       RETURNING d.id, d.webhook_id, d.event_id, d.event_type, d.payload, d.attempt_count, d.traceparent, d.resource_key IS NOT NULL AS ordered),
     lost AS (
       INSERT INTO webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, error)
       SELECT c.id, c.attempt_count - 1, t.lease_end - $4 * interval '1 millisecond', 0, $5
         FROM claimed c JOIN target t ON t.id = c.id WHERE t.lost)
     SELECT c.id, c.webhook_id, c.event_id, c.event_type, c.payload, c.attempt_count, c.traceparent, c.ordered,
            w.url, w.secret, w.previous_secret, w.previous_secret_expires_at, w.rate_per_second AS rate,
            extract(epoch FROM t.send_at - now())::float8 * 1000 AS send_in_ms,
            CASE WHEN NOT t.lost THEN extract(epoch FROM t.send_at - t.lease_end)::float8 * 1000 END AS late_ms
       FROM claimed c JOIN target t ON t.id = c.id JOIN webhooks w ON w.id = c.webhook_id`,
    [options.limit, options.skipWebhooks, options.leaseToken, options.leaseMs, LOST_ATTEMPT]);
  return rows.map((row) => ({
    id: row.id, webhookId: row.webhook_id, eventId: row.event_id, eventType: row.event_type, payload: row.payload,
    attemptCount: row.attempt_count, leaseToken: options.leaseToken, traceparent: row.traceparent, ...target(secrets, row), ...(row.ordered ? { ordered: true } : {}),
    ...(row.rate !== null && row.send_in_ms !== null ? { pace: { perSecond: row.rate, sendInMs: Math.max(0, row.send_in_ms), lateMs: Math.max(0, row.late_ms ?? 0) } } : {}),
  }));
}

/** When the next pending delivery (or lease) falls due; null when nothing is scheduled. */
export async function nextDueAt(db: Db): Promise<Date | null> {
  const [row] = await query<{ due: Timestamp | null }>(db,
    `SELECT min(next_attempt_at) AS due FROM webhook_deliveries d WHERE status = 'pending' AND next_attempt_at IS NOT NULL AND ${NOT_HELD_BACK}`);
  return row?.due == null ? null : toDate(row.due);
}

/** A finished attempt of a claimed delivery, or one given back unsent. */
export interface Completion {
  readonly delivery: ClaimedDelivery;
  readonly startedAt: Date;
  readonly outcome: AttemptOutcome;
  /** Failed and no attempt left. */
  readonly exhausted: boolean;
  /** Delay before the next attempt when it failed and is not exhausted. */
  readonly nextDelayMs: number | null;
  /**
   * Not one of the ladder's attempts: the receiver answered 429 (`throttled`: logged, and its
   * endpoint pauses), or its endpoint was paused when its turn came (not sent, due again after
   * `waitMs` at least). Settled by `holdBack` (pacing.ts).
   */
  readonly held?: { readonly throttled: boolean; readonly waitMs: number };
}

/** A held completion as `holdBack` takes it. */
export const heldBack = (c: Completion): HeldBack => ({
  id: c.delivery.id, leaseToken: c.delivery.leaseToken, webhookId: c.delivery.webhookId, throttled: c.held!.throttled,
  retryAfterMs: c.held!.throttled ? c.outcome.retryAfterMs : null, waitMs: c.held!.waitMs, statusCode: c.outcome.statusCode, error: c.outcome.error,
});

/**
 * Logs every finished attempt (also one whose delivery a manual retry took over meanwhile, not
 * one whose delivery was deleted with its webhook; a throttled one marked so) and moves each
 * delivery whose lease is still the attempt's own to its next state (a throttled one's is
 * `holdBack`'s). A paced webhook's retry takes a slot of its pace (pacing.ts, RETRY_SLOTS). With
 * `resetOnSuccess`, a success also zeroes its webhook's consecutive-exhausted and 429 counters in
 * the same statement: one round trip per batch on the hot path.
 */
export async function settle(db: Db, completions: readonly Completion[], resetOnSuccess: boolean): Promise<Array<{ id: string; webhook_id: string; status: string; ord: number }>> {
  const col = <T>(pick: (c: Completion) => T) => completions.map(pick);
  return query(db, `WITH u AS (
      SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::timestamptz[], $5::boolean[], $6::boolean[], $7::int[],
                           $8::int[], $9::int[], $10::text[], $11::text[], $12::int[], $13::uuid[], $14::boolean[])
        AS u(id, token, attempt_number, started_at, ok, exhausted, delay_ms, status_code, duration_ms, error, excerpt, ord, webhook_id, throttled)),
    attempts AS (
      INSERT INTO webhook_attempts (delivery_id, attempt_number, started_at, status_code, duration_ms, error, response_excerpt, throttled)
      SELECT u.id, u.attempt_number, u.started_at, u.status_code, u.duration_ms, u.error, u.excerpt, u.throttled FROM u
       WHERE EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = u.id)),
    ${RETRY_SLOTS},
    settled AS (
      UPDATE webhook_deliveries d
         SET status = CASE WHEN u.ok THEN 'succeeded' WHEN u.exhausted THEN 'exhausted' ELSE 'pending' END,
             -- A webhook disabled meanwhile keeps its pending deliveries paused (NULL) until resumed.
             next_attempt_at = CASE WHEN u.ok OR u.exhausted OR w.status <> 'active' THEN NULL
                                    ELSE coalesce(r.slot, now() + u.delay_ms * interval '1 millisecond') END,
             lease_token = NULL, last_status_code = u.status_code, last_error = u.error, updated_at = now()
        FROM u JOIN webhooks w ON w.id = u.webhook_id LEFT JOIN retry_slots r ON r.id = u.id
       WHERE d.id = u.id AND d.lease_token = u.token AND NOT u.throttled
      RETURNING d.id, d.webhook_id, d.status, u.ord)${resetOnSuccess ? `,
    -- Not a webhook whose pace moved above: one statement changes a row once (the next batch resets it).
    reset AS (
      UPDATE webhooks w SET consecutive_failures = 0, consecutive_429 = 0, last_success_at = now(), updated_at = now()
       WHERE w.id IN (SELECT webhook_id FROM settled WHERE status = 'succeeded') AND (w.consecutive_failures <> 0 OR w.consecutive_429 <> 0)
         AND w.id NOT IN (SELECT id FROM retry_pace))` : ''},
    -- Health's last success, written at most every 10 s a webhook and never waited for: a busy
    -- endpoint's batches do not queue on its row (the row reset above is not taken twice).
    seen AS (
      UPDATE webhooks w SET last_success_at = now()
       WHERE w.id IN (SELECT s.id FROM webhooks s
                       WHERE s.id IN (SELECT webhook_id FROM settled WHERE status = 'succeeded')
                         ${resetOnSuccess ? 'AND s.consecutive_failures = 0 AND s.consecutive_429 = 0' : ''}
                         AND (s.last_success_at IS NULL OR s.last_success_at < now() - interval '10 seconds')
                       FOR UPDATE SKIP LOCKED))
    SELECT id, webhook_id, status, ord FROM settled`,
  [col((c) => c.delivery.id), col((c) => c.delivery.leaseToken), col((c) => c.delivery.attemptCount), col((c) => c.startedAt),
    col((c) => c.outcome.ok), col((c) => c.exhausted), col((c) => c.nextDelayMs ?? 0), col((c) => c.outcome.statusCode),
    col((c) => c.outcome.durationMs), col((c) => c.outcome.error), col((c) => c.outcome.responseExcerpt), completions.map((_, i) => i),
    col((c) => c.delivery.webhookId), col((c) => c.held?.throttled ?? false)]);
}

/** No traffic to a disabled webhook: its waiting deliveries pause (NULL) until it is resumed. */
export async function pauseWaiting(db: Db, webhookIds: readonly string[]): Promise<void> {
  await query(db, `UPDATE webhook_deliveries SET next_attempt_at = NULL, updated_at = now()
    WHERE webhook_id = ANY($1::uuid[]) AND status = 'pending' AND lease_token IS NULL`, [webhookIds]);
}

/** The deliveries paused while the webhook was disabled become due now (and the dispatchers are woken). */
export async function resumePaused(db: Db, webhookId: string): Promise<void> {
  await query(db, `WITH resumed AS (
      UPDATE webhook_deliveries SET next_attempt_at = now(), updated_at = now()
       WHERE webhook_id = $1 AND status = 'pending' AND next_attempt_at IS NULL)
    SELECT pg_notify($2, '')`, [webhookId, DELIVERY_CHANNEL]);
}

/** A delivery of one event to one webhook only, due after `delayMs`. */
export async function insertDelivery(
  db: Db, delivery: { webhookId: string; catalogId: string; eventId: string; eventType: string; payload: string; delayMs: number },
): Promise<string> {
  const [row] = await query<{ id: string }>(db, `WITH created AS (
       INSERT INTO webhook_deliveries (id, webhook_id, catalog_id, event_id, event_type, payload, status, attempt_count, next_attempt_at)
       VALUES (catalog_uuid_v7(), $1, $2, $3, $4, $5, 'pending', 0, now() + $6 * interval '1 millisecond') RETURNING id)
     SELECT created.id, pg_notify($7, '') FROM created`,
  [delivery.webhookId, delivery.catalogId, delivery.eventId, delivery.eventType, delivery.payload, delivery.delayMs, DELIVERY_CHANNEL]);
  return row!.id;
}
