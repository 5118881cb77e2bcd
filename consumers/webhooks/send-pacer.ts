// A paced webhook's sends in one process, one after another at its rate: deliveries claimed before the process stalled go out at the pace when it runs again, not together.
import { setTimeout as sleep } from 'node:timers/promises';
import { MAKE_UP_S } from '../../domain/webhooks/pacing.ts';

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
