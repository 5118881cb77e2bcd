// A webhook's pace (docs/webhooks.md, "Rate limits"): slots in the schedule from webhooks.pace_at, send times from the claims' own pace, the claim's pause and in-flight conditions, a 429's pause, re-spacing on a new limit and catching up after a stall.
//
// The pace lives in Postgres, not in a process: every consumers process of a fleet takes slots
// from the same row (under its lock), and send times from the same pace (under the claim's
// try-lock), so the limit is the endpoint's whatever the fleet's size.
import { query } from '../../platform/db/sql.ts';
import type { Db, Timestamp } from '../../platform/db/sql.ts';

/** A receiver's Retry-After is honoured up to this; past it the endpoint is tried again (and may pause again). */
export const MAX_PAUSE_MS = 3600_000;
/** A 429 without Retry-After pauses 1 s, doubling for each 429 that follows a pause, up to 60 s; a success starts again at 1 s. */
export const FIRST_PAUSE_MS = 1000;
export const LONGEST_BARE_PAUSE_MS = 60_000;

/** SQL over a webhooks row `w`: a new delivery may be born leased (attempted at once) only without a pace or a cap to respect. */
export const LEASABLE_AT_ONCE = 'w.rate_per_second IS NULL AND w.max_in_flight IS NULL';

/**
 * The fan-out's CTE after `matched` (with `paced`, `webhook_id`, and `k`: the delivery's place
 * among its webhook's in this batch, from 0, in event order): `pace`, each paced webhook's first
 * slot, `greatest(now + first delay, pace_at, paused_until)`, with pace_at moved past the batch's
 * last, `first_slot + k / rate`. The UPDATE takes the row's lock, so a fan-out in another process
 * waits and continues from the new pace_at. Joined by webhook alone: a few rows, whatever the batch.
 */
export const takeSlots = (firstDelayMs: string) => `pace AS (
       UPDATE webhooks w SET pace_at = greatest(w.pace_at, w.paused_until, now() + ${firstDelayMs} * interval '1 millisecond')
                                       + n.n / w.rate_per_second * interval '1 second'
         FROM (SELECT webhook_id, count(*) AS n FROM matched WHERE paced GROUP BY webhook_id) n
        WHERE w.id = n.webhook_id AND w.rate_per_second IS NOT NULL
       RETURNING w.id, w.pace_at - n.n / w.rate_per_second * interval '1 second' AS first_slot, w.rate_per_second AS rate)`;

/** A delivery's slot in the fan-out's INSERT, from `matched` m and its webhook's `pace` p (NULL when not paced). */
export const SLOT = 'p.first_slot + m.k / p.rate * interval \'1 second\'';

/**
 * The settlement's CTEs after `u`: a paced webhook's retry due before its pace's end waits its
 * turn behind the deliveries already waiting (a slot from pace_at); one due later keeps its
 * ladder time. `retry_pace` names the webhooks whose row it changed.
 */
export const RETRY_SLOTS = `retrying AS (
      SELECT u.id, u.webhook_id, now() + u.delay_ms * interval '1 millisecond' AS at FROM u WHERE NOT u.ok AND NOT u.exhausted AND NOT u.throttled),
    queued AS (
      SELECT r.id, r.webhook_id, row_number() OVER (PARTITION BY r.webhook_id ORDER BY r.at, r.id) - 1 AS k
        FROM retrying r JOIN webhooks w ON w.id = r.webhook_id WHERE w.rate_per_second IS NOT NULL AND r.at < w.pace_at),
    retry_pace AS (
      UPDATE webhooks w SET pace_at = w.pace_at + q.n / w.rate_per_second * interval '1 second'
        FROM (SELECT webhook_id, count(*) AS n FROM queued GROUP BY webhook_id) q
       WHERE w.id = q.webhook_id AND w.rate_per_second IS NOT NULL
      RETURNING w.id, w.pace_at - q.n / w.rate_per_second * interval '1 second' AS first_slot, w.rate_per_second AS rate),
    retry_slots AS (
      SELECT q.id, p.first_slot + q.k / p.rate * interval '1 second' AS slot FROM queued q JOIN retry_pace p ON p.id = q.webhook_id)`;

// The advisory lock space of paced and capped webhooks' claims ('whcp').
const CLAIM_LOCK_SPACE = 0x77686370;

/**
 * How far ahead of now a claim may give a paced webhook's deliveries send times: each claim admits
 * at most this long's worth (one at least), so deliveries that fell due late (a stalled process,
 * a slow claim) go out at the pace, not together.
 */
export const SEND_AHEAD_S = 0.25;
/**
 * How far behind now a paced webhook's send times may restart: a hiccup of the senders shorter
 * than this is made up by sending that much at once (the burst a receiver sees at worst), a longer
 * one is lost to the pace rather than sent in a burst.
 */
export const MAKE_UP_S = 0.25;

/**
 * The claim transaction's first statement when a webhook has a pace or a cap: takes each such
 * webhook's lock for the transaction, or names it as claimed by another process right now.
 * Without it two processes' claims, each blind to the other's uncommitted leases and send times,
 * could both fill the room or take the same send times; with it the claim statement that follows
 * sees every claim committed before. Try-locks: a claim never waits for another, it leaves that
 * webhook to it.
 */
export const LIMITED_ELSEWHERE = `SELECT id FROM webhooks
  WHERE (rate_per_second IS NOT NULL OR max_in_flight IS NOT NULL) AND NOT pg_try_advisory_xact_lock(${CLAIM_LOCK_SPACE}, hashtext(id::text))`;

/** The claim's first CTE: each capped webhook's room, its cap less its live leases (a dead worker's expired lease is not in flight). */
export const CAPPED = `capped AS (
       SELECT w.id, w.max_in_flight - (SELECT count(*) FROM webhook_deliveries l WHERE l.webhook_id = w.id AND l.status = 'pending'
                                         AND l.lease_token IS NOT NULL AND l.next_attempt_at > now())::int AS room
         FROM webhooks w WHERE w.max_in_flight IS NOT NULL)`;

/**
 * The claim's second CTE: each paced webhook's send pace (webhook_send_paces, a GCRA over the
 * claims): `base`, its next send time, at most MAKE_UP_S before now; `room`, how many sends fit
 * from it to now + SEND_AHEAD_S (one at least when it is not ahead of now).
 */
export const PACED = `paced AS (
       SELECT p.id, p.rate, p.base,
              greatest(CASE WHEN p.base <= now() THEN 1 ELSE 0 END,
                       floor(extract(epoch FROM now() + ${SEND_AHEAD_S} * interval '1 second' - p.base)::float8 * p.rate + 1e-6))::int AS room
         FROM (SELECT w.id, w.rate_per_second AS rate, greatest(s.send_at, now() - ${MAKE_UP_S} * interval '1 second') AS base
                 FROM webhooks w LEFT JOIN webhook_send_paces s ON s.webhook_id = w.id WHERE w.rate_per_second IS NOT NULL) p)`;

/** SQL over a delivery `d` in the claim's walk: its webhook is neither paused by a 429, nor full, nor out of send times (one array, computed once). */
export const ENDPOINT_OPEN = `NOT (d.webhook_id = ANY(ARRAY(SELECT w.id FROM webhooks w WHERE w.paused_until > now()
                                        UNION ALL SELECT c.id FROM capped c WHERE c.room <= 0
                                        UNION ALL SELECT p.id FROM paced p WHERE p.room <= 0)))`;

/**
 * The claim's due rows a capped webhook has room for and a paced one send times for, in due order
 * (the rest stay pending, locked until the claim commits); a paced one's `send_at`, one interval
 * of its rate after the one before, and `send_paces` moving its pace past the last.
 */
export const ADMITTED = `admitted AS (
       SELECT r.id, r.webhook_id, r.lost, r.lease_end, p.base + (r.nth - 1) / p.rate * interval '1 second' AS send_at
         FROM (SELECT due.*, row_number() OVER (PARTITION BY due.webhook_id ORDER BY due.lease_end, due.id) AS nth FROM due) r
         LEFT JOIN capped c ON c.id = r.webhook_id
         LEFT JOIN paced p ON p.id = r.webhook_id
        WHERE (c.id IS NULL OR r.nth <= c.room) AND (p.id IS NULL OR r.nth <= p.room)),
     send_paces AS (
       INSERT INTO webhook_send_paces (webhook_id, send_at)
       SELECT a.webhook_id, max(a.send_at) + 1 / p.rate * interval '1 second' FROM admitted a JOIN paced p ON p.id = a.webhook_id
        GROUP BY a.webhook_id, p.rate
       ON CONFLICT (webhook_id) DO UPDATE SET send_at = excluded.send_at)`;

/**
 * A paced webhook whose claimed deliveries went out well after their slots (its sends fell behind:
 * a stalled process, or a pause of the fleet) moves its waiting deliveries' slots, and the pace
 * the fan-out continues from, later by how far behind it is: its earliest waiting slot, before its
 * next send time, by more than `minLagMs`. Without it the slots passed meanwhile would stay at the
 * head of the due index, each claim walking past them and locking them to admit a few, and the
 * deliveries due behind them would wait. Measured under the webhooks row's lock (taken first, as
 * the fan-out and a 429's pause take it), so the processes that each saw the lag move it once;
 * rows being claimed or settled right now keep their slots.
 */
export async function catchUp(db: Db, webhookId: string, minLagMs: number): Promise<void> {
  await db.transactional(async (tx) => {
    const [paced] = await query(tx, 'SELECT 1 FROM webhooks WHERE id = $1 AND rate_per_second IS NOT NULL FOR UPDATE', [webhookId]);
    if (!paced) return;
    await query(tx, `WITH behind AS (
         SELECT greatest(now(), (SELECT send_at FROM webhook_send_paces WHERE webhook_id = $1)) - min(next_attempt_at) AS lag
           FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'pending' AND lease_token IS NULL AND next_attempt_at IS NOT NULL),
       moved AS (
         UPDATE webhook_deliveries d SET next_attempt_at = d.next_attempt_at + b.lag, updated_at = now()
           FROM behind b
          WHERE b.lag > $2 * interval '1 millisecond'
            AND d.id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'pending' AND lease_token IS NULL
                            AND next_attempt_at IS NOT NULL FOR UPDATE SKIP LOCKED))
       UPDATE webhooks w SET pace_at = w.pace_at + b.lag FROM behind b WHERE w.id = $1 AND b.lag > $2 * interval '1 millisecond'`,
    [webhookId, minLagMs]);
  });
}

/** A claimed delivery given back without using an attempt of the ladder. */
export interface HeldBack {
  readonly id: string;
  readonly leaseToken: string;
  readonly webhookId: string;
  /** The receiver answered 429 (with `retryAfterMs`, or none): the endpoint pauses. */
  readonly throttled: boolean;
  readonly retryAfterMs: number | null;
  /** Not sent, as its endpoint was paused when its turn came: due again after this long at least. */
  readonly waitMs: number;
  readonly statusCode: number | null;
  readonly error: string | null;
}

/**
 * In the settlement's transaction, before the attempts are settled: pauses the endpoints that
 * answered 429 (a Retry-After, capped at an hour; without one, 1 s doubling to 60 s, not grown
 * by the 429s of requests already on their way during a pause), gives the held deliveries their
 * attempt back and makes them due when the pause ends. A paced webhook's deliveries due during
 * the pause take new slots after it, so the pause's end is not a burst. Returns each webhook's
 * pause end.
 */
export async function holdBack(db: Db, held: readonly HeldBack[]): Promise<Map<string, Date>> {
  const byWebhook = new Map<string, { throttled: boolean; retryAfterMs: number | null }>();
  for (const h of held) {
    const seen = byWebhook.get(h.webhookId) ?? { throttled: false, retryAfterMs: null };
    const retryAfterMs = h.retryAfterMs === null ? seen.retryAfterMs : Math.max(seen.retryAfterMs ?? 0, h.retryAfterMs);
    byWebhook.set(h.webhookId, { throttled: seen.throttled || h.throttled, retryAfterMs });
  }
  const ids = [...byWebhook.keys()].sort();
  // In id order: two settlements pausing the same webhooks never wait for each other in a cycle.
  await query(db, 'SELECT 1 FROM webhooks WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE', [ids]);
  const paused = await query<{ id: string; paused_until: Timestamp | null }>(db,
    `UPDATE webhooks w SET
        consecutive_429 = CASE WHEN x.throttled AND NOT coalesce(w.paused_until > now(), false) THEN w.consecutive_429 + 1 ELSE w.consecutive_429 END,
        paused_until = CASE WHEN NOT x.throttled THEN w.paused_until
                            WHEN x.retry_after_ms IS NOT NULL THEN greatest(w.paused_until, now() + least(x.retry_after_ms, $4) * interval '1 millisecond')
                            WHEN coalesce(w.paused_until > now(), false) THEN w.paused_until
                            ELSE now() + least($5 * 2 ^ least(w.consecutive_429, 16), $6) * interval '1 millisecond' END
       FROM unnest($1::uuid[], $2::boolean[], $3::int[]) AS x(id, throttled, retry_after_ms)
      WHERE w.id = x.id
     RETURNING w.id, w.paused_until`,
    [ids, ids.map((id) => byWebhook.get(id)!.throttled), ids.map((id) => byWebhook.get(id)!.retryAfterMs), MAX_PAUSE_MS, FIRST_PAUSE_MS, LONGEST_BARE_PAUSE_MS]);
  const col = <T>(pick: (h: HeldBack) => T) => held.map(pick);
  // Only while the lease is still theirs (a manual retry may have taken the delivery over).
  await query(db, `UPDATE webhook_deliveries d
      SET attempt_count = d.attempt_count - 1, lease_token = NULL, updated_at = now(),
          next_attempt_at = CASE WHEN w.status <> 'active' THEN NULL
                                 ELSE greatest(w.paused_until, now() + h.wait_ms * interval '1 millisecond') END,
          last_status_code = CASE WHEN h.throttled THEN h.status_code ELSE d.last_status_code END,
          last_error = CASE WHEN h.throttled THEN h.error ELSE d.last_error END
     FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::int[], $5::int[], $6::text[]) AS h(id, token, throttled, wait_ms, status_code, error),
          webhooks w
    WHERE d.id = h.id AND d.lease_token = h.token AND w.id = d.webhook_id`,
  [col((h) => h.id), col((h) => h.leaseToken), col((h) => h.throttled), col((h) => Math.max(0, Math.round(h.waitMs))), col((h) => h.statusCode), col((h) => h.error)]);
  await query(db, `WITH p AS (
       SELECT id, greatest(pace_at, paused_until) AS base, paused_until, rate_per_second AS rate FROM webhooks
        WHERE id = ANY($1::uuid[]) AND rate_per_second IS NOT NULL AND paused_until > now()),
     moved AS (
       SELECT d.id, d.webhook_id, row_number() OVER (PARTITION BY d.webhook_id ORDER BY d.next_attempt_at, d.id) - 1 AS k
         FROM webhook_deliveries d JOIN p ON p.id = d.webhook_id
        WHERE d.status = 'pending' AND d.lease_token IS NULL AND d.next_attempt_at <= p.paused_until),
     slotted AS (
       UPDATE webhook_deliveries d SET next_attempt_at = p.base + m.k / p.rate * interval '1 second', updated_at = now()
         FROM moved m JOIN p ON p.id = m.webhook_id
        WHERE d.id = m.id AND d.lease_token IS NULL AND d.status = 'pending')
     UPDATE webhooks w SET pace_at = p.base + coalesce(n.n, 0) / p.rate * interval '1 second'
       FROM p LEFT JOIN (SELECT webhook_id, count(*) AS n FROM moved GROUP BY webhook_id) n ON n.webhook_id = p.id
      WHERE w.id = p.id`, [ids]);
  return new Map(paused.filter((r) => r.paused_until !== null).map((r) => [r.id, new Date(r.paused_until!)]));
}

/**
 * After the owner set, changed or cleared the webhook's rate (in their transaction, the row
 * locked): its waiting deliveries (pending, not in flight, not paused by a disable) take slots of
 * the new pace from now (or the pause's end), in the order they were due, and its send pace starts
 * afresh; without a rate they are all due now. The caller wakes the dispatchers.
 */
export async function respaceWaiting(db: Db, webhookId: string): Promise<void> {
  await query(db, `WITH w AS (
       SELECT id, rate_per_second AS rate, greatest(now(), paused_until) AS base FROM webhooks WHERE id = $1),
     waiting AS (
       SELECT d.id, row_number() OVER (ORDER BY d.next_attempt_at, d.id) - 1 AS k FROM webhook_deliveries d
        WHERE d.webhook_id = $1 AND d.status = 'pending' AND d.lease_token IS NULL AND d.next_attempt_at IS NOT NULL),
     moved AS (
       UPDATE webhook_deliveries d
          SET next_attempt_at = CASE WHEN w.rate IS NULL THEN now() ELSE w.base + m.k / w.rate * interval '1 second' END, updated_at = now()
         FROM waiting m, w WHERE d.id = m.id),
     paced AS (
       UPDATE webhooks x SET pace_at = CASE WHEN w.rate IS NULL THEN NULL ELSE w.base + (SELECT count(*) FROM waiting) / w.rate * interval '1 second' END
         FROM w WHERE x.id = w.id),
     restarted AS (
       DELETE FROM webhook_send_paces WHERE webhook_id = $1)
     SELECT 1`, [webhookId]);
}

/** The webhook's backlog for its API answer: pending deliveries, the oldest's creation, and a 429's pause. */
export async function backlogs(db: Db, webhookIds: readonly string[]): Promise<Map<string, { waiting: number; oldestWaitingSince: string | null; pausedUntil: string | null }>> {
  if (webhookIds.length === 0) return new Map();
  const rows = await query<{ id: string; waiting: string; oldest: Timestamp | null; paused_until: Timestamp | null }>(db,
    `SELECT w.id, b.waiting, b.oldest, CASE WHEN w.paused_until > now() THEN w.paused_until END AS paused_until
       FROM webhooks w, LATERAL (SELECT count(*) AS waiting, min(d.created_at) AS oldest FROM webhook_deliveries d
                                  WHERE d.webhook_id = w.id AND d.status = 'pending') b
      WHERE w.id = ANY($1::uuid[])`, [webhookIds]);
  const iso = (value: Timestamp | null) => (value === null ? null : new Date(value).toISOString());
  return new Map(rows.map((r) => [r.id, { waiting: Number(r.waiting), oldestWaitingSince: iso(r.oldest), pausedUntil: iso(r.paused_until) }]));
}

/**
 * Every webhook with pending deliveries, for /metrics: how many and the oldest's age, grouped in
 * one statement over webhook_deliveries_pending_idx (webhook_id, created_at), whose rows are the
 * backlog alone; the webhooks row gives the catalog and status.
 */
export async function pendingByWebhook(db: Db): Promise<Array<{ webhookId: string; catalogId: string; status: string; waiting: number; oldestAgeSeconds: number }>> {
  const rows = await query<{ webhook_id: string; catalog_id: string; status: string; waiting: string; age: number }>(db, 'webhooks.pending_by_webhook',
    `SELECT b.webhook_id, w.catalog_id, w.status, b.waiting, extract(epoch FROM now() - b.oldest)::float8 AS age
       FROM (SELECT webhook_id, count(*) AS waiting, min(created_at) AS oldest FROM webhook_deliveries
              WHERE status = 'pending' GROUP BY webhook_id) b
       JOIN webhooks w ON w.id = b.webhook_id`);
  return rows.map((r) => ({ webhookId: r.webhook_id, catalogId: r.catalog_id, status: r.status, waiting: Number(r.waiting), oldestAgeSeconds: Math.max(0, r.age) }));
}
