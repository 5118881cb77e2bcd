// The delivery schedule's transactions: claiming due deliveries under a lease, settling attempts, disabling failing webhooks.
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import type { Db } from '../../platform/db/sql.ts';
import { query } from '../../platform/db/sql.ts';
import { claimDue, heldBack, pauseWaiting, settle } from './delivery-store.ts';
import type { ClaimedDelivery, Completion } from './delivery-store.ts';
import { countExhausted } from './disabling.ts';
import { LIMITED_ELSEWHERE, holdBack } from './pacing.ts';

/**
 * The first statement of every claim and settle transaction. Claims and settlements are
 * bookkeeping of an at-least-once process: if Postgres crashes and loses the last few hundred
 * milliseconds of them, the deliveries are simply attempted again (receivers deduplicate by event
 * id), so they do not wait for the WAL flush. Without fresh statistics (a young or fast-growing
 * table) the planner answers the claim with a bitmap scan and a sort of every due row; the ordered
 * walk of the due index is always right for it. LOCAL: the pool's connection gets its defaults
 * back at the end of the transaction, so creating deliveries stays durable.
 */
const DISPATCH_SETTINGS = 'SET LOCAL synchronous_commit = off; SET LOCAL enable_bitmapscan = off';

/**
 * Claims up to `limit` due deliveries of active webhooks, each under a lease of `leaseMs` (see
 * `claimDue`), skipping the webhooks that already have all the attempts in flight they may (in
 * this process, `skipWebhooks`; in the fleet, their `maxInFlight`), those a 429 paused and the
 * paced ones with no send time free, and those another process is claiming right now. Their
 * secrets are opened with `secrets`.
 */
export function claimDueDeliveries(
  db: Db, secrets: SecretBox, options: { limit: number; leaseMs: number; leaseToken: string; skipWebhooks: readonly string[] },
): Promise<ClaimedDelivery[]> {
  return db.transactional(async (tx) => {
    await query(tx, DISPATCH_SETTINGS);
    const elsewhere = await query<{ id: string }>(tx, LIMITED_ELSEWHERE);
    return claimDue(tx, secrets, elsewhere.length === 0 ? options : { ...options, skipWebhooks: [...options.skipWebhooks, ...elsewhere.map((r) => r.id)] });
  });
}

/**
 * Settles finished attempts in one transaction. Without an exhausted delivery or a 429 among them
 * (nearly always) this is one statement. Deliveries held back (a 429, or a paused endpoint) go
 * first: their webhooks pause and they wait for the pause's end, attempt given back. An exhausted
 * delivery also counts, per webhook and in completion order, the consecutive exhausted deliveries
 * (a success zeroes the run), disables the webhooks that reach `disableAfter` and pauses their
 * waiting deliveries. Returns those webhooks, and the pause end of each webhook held back.
 */
export function settleAttempts(
  db: Db, completions: readonly Completion[], disableAfter: number,
): Promise<{ disabled: string[]; pausedUntil: Map<string, Date> }> {
  if (completions.length === 0) return Promise.resolve({ disabled: [], pausedUntil: new Map() });
  const anyExhausted = completions.some((c) => c.exhausted);
  const held = completions.filter((c) => c.held);
  // A throttled attempt is logged like any other; a delivery not sent has no attempt to log.
  const attempted = held.length === 0 ? completions : completions.filter((c) => !c.held || c.held.throttled);
  return db.transactional(async (tx) => {
    await query(tx, DISPATCH_SETTINGS);
    const pausedUntil = held.length > 0 ? await holdBack(tx, held.map(heldBack)) : new Map<string, Date>();
    const settled = attempted.length > 0 ? await settle(tx, attempted, !anyExhausted) : [];
    if (!anyExhausted) return { disabled: [], pausedUntil };
    // Per webhook, in completion order: a success zeroes the run, each exhaustion extends it.
    const runs = new Map<string, { reset: boolean; add: number }>();
    for (const row of settled.sort((a, b) => a.ord - b.ord)) {
      if (row.status === 'pending') continue;
      const run = runs.get(row.webhook_id) ?? { reset: false, add: 0 };
      if (row.status === 'succeeded') runs.set(row.webhook_id, { reset: true, add: 0 });
      else runs.set(row.webhook_id, { reset: run.reset, add: run.add + 1 });
    }
    if (runs.size === 0) return { disabled: [], pausedUntil };
    const disabled = await countExhausted(tx, runs, disableAfter);
    if (disabled.length > 0) await pauseWaiting(tx, disabled);
    return { disabled, pausedUntil };
  });
}
