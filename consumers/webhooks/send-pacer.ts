// A paced webhook's sends in one process, one after another at its rate (deliveries claimed before the process stalled go out at the pace when it runs again, not together), and its catching up once it fell behind.
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClaimedDelivery } from '../../domain/webhooks/delivery-store.ts';
import { catchUp, MAKE_UP_S, SEND_AHEAD_S } from '../../domain/webhooks/pacing.ts';
import { detached } from '../../platform/async-context.ts';
import type { Db } from '../../platform/db/sql.ts';
import type { Logger } from '../../platform/log/logger.ts';

/** How far a send may fall behind its turn and not move the next one later (a timer fired late, a short hiccup): a burst after a stall is at most this long's worth. */
const SLACK_MS = MAKE_UP_S * 1000;

export interface SendPacer {
  /** Resolves when a delivery of the webhook may go: not before `notBefore` (epoch ms), and one interval of `perSecond` after the one before it here. */
  turn(webhookId: string, perSecond: number, notBefore: number): Promise<void>;
}

export function sendPacer(): SendPacer {
  // Per webhook: the queue of turns, how many wait in it, and when the last one went (a GCRA's
  // theoretical time, at most SLACK_MS behind the real one). The next turn is one interval of its
  // own delivery's rate after it, computed when it comes: a stall between claim and send cannot
  // have scheduled several sends for the same moment, and a new rate applies at once.
  const webhooks = new Map<string, { tail: Promise<void>; waiting: number; last: number }>();
  return {
    turn(webhookId, perSecond, notBefore) {
      const state = webhooks.get(webhookId) ?? { tail: Promise.resolve(), waiting: 0, last: -Infinity };
      webhooks.set(webhookId, state);
      state.waiting += 1;
      const interval = 1000 / perSecond;
      state.tail = state.tail.then(async () => {
        const wait = Math.max(notBefore, state.last + interval) - Date.now();
        if (wait > 0) await sleep(wait);
        state.last = Math.max(state.last + interval, Date.now() - SLACK_MS);
        state.waiting -= 1;
        // Forgotten once idle for an interval, when it no longer holds a send back.
        if (state.waiting === 0) {
          setTimeout(() => state.waiting === 0 && webhooks.get(webhookId) === state && webhooks.delete(webhookId), interval).unref();
        }
      });
      return state.tail;
    },
  };
}

// A paced webhook whose claimed deliveries go out this long after their slots has fallen behind:
// its waiting slots move later (pacing.ts, catchUp). Well above a claim's usual delay, even on a
// busy database.
const CATCH_UP_AFTER_MS = 2 * (SEND_AHEAD_S + MAKE_UP_S) * 1000;
// At most once in this long a webhook: moving a large backlog costs the database as much as
// sending a part of it, so a fleet that stays behind (overloaded, not stalled) is not made
// slower still by moving it again and again.
const CATCH_UP_EVERY_MS = 30_000;

export interface PacedSends {
  /** Resolves when the claimed delivery may be sent: at once unless paced, else its send time from the claim and its turn here. */
  turn(delivery: ClaimedDelivery, claimedAt: number): Promise<void>;
  /** After each claim: paced webhooks whose deliveries go out well after their slots catch up (one at a time each here, and not again soon). */
  claimed(deliveries: readonly ClaimedDelivery[]): void;
}

/** The dispatcher's paced sends; counts the catch-ups in `stats`. */
export function pacedSends(db: Db, log: Logger, stats: { catchUps: number }): PacedSends {
  const pacer = sendPacer();
  const caughtUpAt = new Map<string, number>();
  return {
    async turn(delivery, claimedAt) {
      if (delivery.pace) await pacer.turn(delivery.webhookId, delivery.pace.perSecond, claimedAt + delivery.pace.sendInMs);
    },
    claimed(deliveries) {
      const late = new Set(deliveries.filter((d) => d.pace && d.pace.lateMs > CATCH_UP_AFTER_MS).map((d) => d.webhookId));
      const now = Date.now();
      for (const [webhookId, at] of caughtUpAt) if (at < now - CATCH_UP_EVERY_MS) caughtUpAt.delete(webhookId);
      for (const webhookId of late) {
        if (caughtUpAt.has(webhookId)) continue;
        caughtUpAt.set(webhookId, now);
        stats.catchUps += 1;
        void detached(() => catchUp(db, webhookId, CATCH_UP_AFTER_MS))
          .catch((error: unknown) => log.warn({ err: error, webhookId }, 'moving a late paced webhook\'s slots failed'));
      }
    },
  };
}
