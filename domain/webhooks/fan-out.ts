// Fan-out: an event becomes one delivery per matching webhook of its own catalog, the first ones already leased to this worker.
import { DELIVERY_CHANNEL } from './delivery-queue.ts';
import type { ClaimedDelivery, Queryable } from './delivery-queue.ts';

export interface FanOutEvent {
  readonly id: string;
  readonly catalogId: string;
  readonly type: string;
  readonly createdAt: string;
  /** The exact bytes published, sent unchanged to every subscriber. */
  readonly payload: string;
}

export interface FanOutOptions {
  /** The ladder's first delay; only when it is 0 can a delivery be attempted at once. */
  readonly firstDelayMs: number;
  /** How many new deliveries this worker will attempt itself right away (born leased). */
  readonly leaseSlots: number;
  readonly leaseMs: number;
  readonly leaseToken: string;
}

/**
 * The events whose catalog has an active webhook. Most catalogs have none, and an import's
 * events come by the thousand: asking first keeps their payloads off the wire to Postgres.
 */
async function withActiveWebhooks(db: Queryable, events: readonly FanOutEvent[]): Promise<readonly FanOutEvent[]> {
  if (events.length === 0) return events;
  const catalogs = [...new Set(events.map((e) => e.catalogId))];
  const { rows } = await db.query<{ catalog_id: string }>(
    `SELECT DISTINCT catalog_id FROM webhooks WHERE catalog_id = ANY($1::uuid[]) AND status = 'active'`, [catalogs]);
  if (rows.length === catalogs.length) return events;
  const subscribed = new Set(rows.map((r) => r.catalog_id));
  // Postgres prints a uuid in lower case; the event's text may not be.
  return events.filter((e) => subscribed.has(e.catalogId.toLowerCase()));
}

/**
 * Creates the deliveries of a batch of events in one statement, once the events of catalogs
 * without an active webhook are set aside: one per active webhook of the event's own catalog
 * that subscribes to its type (or `*`) and existed when the event happened.
 * A re-read event creates nothing twice (the (webhook, event) pair is unique). Up to `leaseSlots`
 * new deliveries are inserted already claimed (attempt 1, leased): they skip a round trip through
 * the schedule and are returned for the caller to attempt at once. The rest are due now (or after
 * the first delay) for whichever worker claims them; if this worker dies, its leases expire and
 * the same happens to the leased ones.
 */
export async function createDeliveries(db: Queryable, batch: readonly FanOutEvent[], options: FanOutOptions): Promise<{ created: number; leased: ClaimedDelivery[] }> {
  const events = await withActiveWebhooks(db, batch);
  if (events.length === 0) return { created: 0, leased: [] };
  const slots = options.firstDelayMs === 0 ? options.leaseSlots : 0;
  const result = await db.query<{
    id: string; webhook_id: string; event_id: string; leased: boolean;
    url: string; secret: string; previous_secret: string | null; previous_secret_expires_at: Date | null;
  }>(
    `WITH e AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[]) WITH ORDINALITY
         AS e(event_id, catalog_id, event_type, created_at, ord)),
     matched AS (
       SELECT w.id AS webhook_id, w.catalog_id, e.event_id, e.event_type, e.ord,
              row_number() OVER (ORDER BY e.ord, w.id) <= $6::int AS leased
         FROM e JOIN webhooks w ON w.catalog_id = e.catalog_id AND w.status = 'active' AND w.created_at <= e.created_at
                 AND (w.events @> ARRAY['*'] OR w.events @> ARRAY[e.event_type])),
     created AS (
       INSERT INTO webhook_deliveries (id, webhook_id, catalog_id, event_id, event_type, payload, status, attempt_count, lease_token, next_attempt_at)
       SELECT gen_random_uuid(), m.webhook_id, m.catalog_id, m.event_id, m.event_type, ($5::text[])[m.ord::int], 'pending',
              CASE WHEN m.leased THEN 1 ELSE 0 END,
              CASE WHEN m.leased THEN $7::uuid END,
              now() + CASE WHEN m.leased THEN $8::int ELSE $9::int END * interval '1 millisecond'
         FROM matched m
       ON CONFLICT (webhook_id, event_id) DO NOTHING
       RETURNING id, webhook_id, event_id, lease_token IS NOT NULL AS leased)
     SELECT c.id, c.webhook_id, c.event_id, c.leased, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at
       FROM created c JOIN webhooks w ON w.id = c.webhook_id`,
    [events.map((e) => e.id), events.map((e) => e.catalogId), events.map((e) => e.type), events.map((e) => e.createdAt),
      events.map((e) => e.payload), slots, options.leaseToken, options.leaseMs, options.firstDelayMs],
  );
  if (result.rows.some((r) => !r.leased)) await db.query('SELECT pg_notify($1, $2)', [DELIVERY_CHANNEL, '']);
  const byId = new Map(events.map((e) => [e.id, e]));
  const leased = result.rows.filter((r) => r.leased).map((r): ClaimedDelivery => {
    const event = byId.get(r.event_id)!;
    return {
      id: r.id,
      webhookId: r.webhook_id,
      eventId: event.id,
      eventType: event.type,
      payload: event.payload,
      attemptCount: 1,
      leaseToken: options.leaseToken,
      url: r.url,
      secret: r.secret,
      previousSecret: r.previous_secret,
      previousSecretExpiresAt: r.previous_secret_expires_at,
    };
  });
  return { created: result.rows.length, leased };
}
