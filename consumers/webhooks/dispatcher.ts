// The delivery worker: claims due deliveries from Postgres under a lease, POSTs them, and settles the attempts in batches.
import { detached } from '../../platform/async-context.ts';
import { failSpan, inSpan } from '../../platform/tracing.ts';
import type { Span } from '../../platform/tracing.ts';
import { randomUUID } from 'node:crypto';
import { claimDueDeliveries, settleAttempts } from '../../domain/webhooks/delivery-queue.ts';
import { DELIVERY_CHANNEL, nextDueAt } from '../../domain/webhooks/delivery-store.ts';
import type { ClaimedDelivery, Completion } from '../../domain/webhooks/delivery-store.ts';
import { nextAttemptDelay } from '../../domain/webhooks/retry-schedule.ts';
import { createSender } from '../../domain/webhooks/send-delivery.ts';
import type { AttemptOutcome } from '../../domain/webhooks/send-delivery.ts';
import type { Config } from '../../platform/config/config.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import { listenToChannel } from '../../platform/db/connections.ts';
import type { ChannelListener } from '../../platform/db/connections.ts';
import type { Db } from '../../platform/db/sql.ts';
import type { Logger } from '../../platform/log/logger.ts';
import { endpointPauses } from './endpoint-pauses.ts';
import { pacedSends } from './send-pacer.ts';
import { createSignedSend } from './signed-send.ts';

export interface DispatcherOptions {
  readonly config: Pick<Config, 'databaseUrl' | 'webhookRetryDelaysMs' | 'webhookTimeoutMs' | 'webhookDisableAfter' | 'webhookAllowHttp' | 'outboundAllowPrivate'>;
  readonly db: Db;
  /** Opens the secrets of the deliveries it claims, to sign them. */
  readonly secrets: SecretBox;
  readonly logger: Logger;
  /** Attempts in flight in this process. */
  readonly maxInFlight?: number;
  /** Attempts in flight per webhook, so one slow receiver cannot take every slot. */
  readonly maxInFlightPerWebhook?: number;
  /** Longest nap when nothing is due (other instances may schedule work without notifying us). */
  readonly pollIntervalMs?: number;
  /** Called with each attempt's outcome (metrics); `throttled` is a 429, not counted as an attempt of the ladder. */
  readonly onAttempt?: (outcome: 'succeeded' | 'failed' | 'exhausted' | 'throttled') => void;
  /** Called after a batch disabled webhooks (their owners are to be e-mailed). */
  readonly onDisabled?: (webhookIds: string[]) => void;
}

export interface Dispatcher {
  start(): Promise<void>;
  /** How long a claim lasts; deliveries handed over with `attempt` must carry a lease this long. */
  readonly leaseMs: number;
  /** Takes up to `wanted` slots for deliveries the caller claims itself; give back unused ones. */
  reserve(wanted: number): number;
  release(slots: number): void;
  /** Attempts deliveries the caller already leased, each on a slot it reserved. */
  attemptNow(deliveries: readonly ClaimedDelivery[]): void;
  /** Stops claiming, lets the attempts in flight finish (each ends by its timeout), settles them. */
  stop(): Promise<void>;
  readonly stats: { claimed: number; succeeded: number; failed: number; flushes: number; claimMs: number; settleMs: number; catchUps: number };
}

// What a delivery given back unsent (its endpoint paused) records: nothing, as no attempt was made.
const NOT_SENT: AttemptOutcome = { ok: false, statusCode: null, durationMs: 0, error: null, responseExcerpt: null, retryAfterMs: null };

// Settling in batches keeps Postgres at a few statements per batch rather than per delivery.
const FLUSH_SIZE = 200;
const FLUSH_DELAY_MS = 5;
// A paced webhook's slots fall due a few ms apart: a claim for each would cost Postgres more than
// the deliveries it claims, so the loop waits at least this long between claims that found room.
const CLAIM_GAP_MS = 20;

export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { config, db } = options;
  const log = options.logger.child({ component: 'webhook-dispatcher' });
  const maxInFlight = options.maxInFlight ?? 512;
  const perWebhook = options.maxInFlightPerWebhook ?? 128;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  // The lease outlives any attempt (bounded by the timeout) with room for settling it; a worker
  // that dies leaves its deliveries due again once it ends.
  const leaseMs = 2 * config.webhookTimeoutMs + 2000;
  const sender = createSender({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.outboundAllowPrivate, allowHttp: config.webhookAllowHttp });
  const stats = { claimed: 0, succeeded: 0, failed: 0, flushes: 0, claimMs: 0, settleMs: 0, catchUps: 0 };

  let running = false;
  let loop: Promise<void> | undefined;
  let listener: ChannelListener | undefined;
  let woken = false;
  let wake: (() => void) | undefined;
  const inFlightByWebhook = new Map<string, number>();
  let inFlight = 0;
  // Set while the loop waits for a free slot: only then does a finished attempt wake it (a claim
  // per finished attempt would cost a query per delivery for nothing).
  let waitingForRoom = false;
  const attempts = new Set<Promise<void>>();
  let pending: Completion[] = [];
  let flushTimer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();
  const settleFailures = new WeakMap<Completion, number>();
  // This process sends nothing more to an endpoint from the moment its 429 arrives.
  const pauses = endpointPauses();
  const send = createSignedSend(sender, log, pauses.onStatus);
  const paced = pacedSends(db, log, stats);

  const poke = () => {
    woken = true;
    wake?.();
  };

  const nap = (ms: number) => new Promise<void>((done) => {
    if (woken || !running) {
      woken = false;
      return done();
    }
    const timer = setTimeout(finish, Math.max(0, ms));
    function finish() {
      clearTimeout(timer);
      wake = undefined;
      woken = false;
      done();
    }
    wake = finish;
  });

  function flushSoon(): void {
    if (pending.length >= FLUSH_SIZE) {
      clearTimeout(flushTimer);
      flushTimer = undefined;
      void flush();
    } else {
      flushTimer ??= setTimeout(() => {
        flushTimer = undefined;
        void flush();
      }, FLUSH_DELAY_MS);
    }
  }

  /** One flush at a time; a failed one keeps its completions for the next (leases cover the gap). */
  function flush(): Promise<void> {
    // Settles several attempts at once: in no attempt's context (or trace).
    flushing = detached(() => flushing.then(async () => {
      if (pending.length === 0) return;
      const batch = pending;
      pending = [];
      try {
        const settling = performance.now();
        const { disabled, pausedUntil: paused } = await settleAttempts(db, batch, config.webhookDisableAfter);
        stats.flushes += 1;
        stats.settleMs += Math.round(performance.now() - settling);
        if (disabled.length > 0) {
          log.warn({ webhookIds: disabled }, 'webhooks disabled after consecutive exhausted deliveries');
          options.onDisabled?.(disabled);
        }
        // The fleet's pause (it may be longer: no Retry-After, or another process's 429).
        for (const [webhookId, until] of paused) pauses.pauseUntil(webhookId, until.getTime());
        // A settled ordered delivery may let the next of its resource go: claim it now.
        if (batch.some((c) => c.delivery.ordered && (c.outcome.ok || c.exhausted))) poke();
        // A retry, or a pause's end, sooner than the next poll: wake up for it.
        const pauseEnds = [...paused.values()].map((until) => until.getTime() - Date.now());
        const soonest = Math.min(...batch.map((c) => c.nextDelayMs ?? Infinity), ...pauseEnds);
        if (Number.isFinite(soonest)) setTimeout(poke, soonest).unref();
      } catch (error) {
        // Kept for another try, a few times: past that the deliveries' leases end and they are
        // simply attempted again, so dropping loses no delivery (only these attempts' log lines).
        const retry = batch.filter((c) => (settleFailures.set(c, (settleFailures.get(c) ?? 0) + 1).get(c) ?? 0) < 5);
        log.warn({ err: error, completions: batch.length, dropped: batch.length - retry.length }, 'settling attempts failed; will retry');
        pending = [...retry, ...pending];
        setTimeout(flushSoon, 1000).unref();
      }
    }));
    return flushing;
  }

  // Each attempt is a client span in the trace of the change that caused the event; the receiver
  // gets its context in `traceparent`.
  const attempt = (delivery: ClaimedDelivery): Promise<void> => inSpan('webhook attempt', {
    kind: 'client', parent: delivery.traceparent,
    attributes: { 'catalog.webhook.id': delivery.webhookId, 'catalog.delivery.id': delivery.id, 'catalog.event.id': delivery.eventId, 'catalog.delivery.attempt': delivery.attemptCount },
  }, (span) => attemptIn(delivery, span));

  async function attemptIn(delivery: ClaimedDelivery, span: Span | undefined): Promise<void> {
    const startedAt = new Date();
    // Claimed before its endpoint paused: given back unsent, its attempt unused.
    const waitMs = pauses.remainingMs(delivery.webhookId);
    if (waitMs > 0) {
      span?.setAttribute('catalog.delivery.deferred', true);
      pending.push({ delivery, startedAt, outcome: NOT_SENT, exhausted: false, nextDelayMs: null, held: { throttled: false, waitMs } });
      flushSoon();
      return;
    }
    const outcome = await send(delivery, span);
    if (outcome.statusCode !== null) span?.setAttribute('http.response.status_code', outcome.statusCode);
    if (!outcome.ok) failSpan(span, outcome.error ?? `answered ${outcome.statusCode}`);
    if (outcome.statusCode === 429) {
      // Not an attempt of the ladder: sent again once the endpoint's pause ends.
      stats.failed += 1;
      options.onAttempt?.('throttled');
      pending.push({ delivery, startedAt, outcome, exhausted: false, nextDelayMs: null, held: { throttled: true, waitMs: 0 } });
      flushSoon();
      return;
    }
    const nextDelayMs = outcome.ok ? null : nextAttemptDelay(delivery.attemptCount, config.webhookRetryDelaysMs, outcome.retryAfterMs);
    if (outcome.ok) stats.succeeded += 1;
    else stats.failed += 1;
    const exhausted = !outcome.ok && nextDelayMs === null;
    options.onAttempt?.(outcome.ok ? 'succeeded' : exhausted ? 'exhausted' : 'failed');
    pending.push({ delivery, startedAt, outcome, exhausted, nextDelayMs });
    flushSoon();
  }

  function launch(delivery: ClaimedDelivery, reserved = false, claimedAt = Date.now()): void {
    if (!reserved) inFlight += 1;
    inFlightByWebhook.set(delivery.webhookId, (inFlightByWebhook.get(delivery.webhookId) ?? 0) + 1);
    const task = paced.turn(delivery, claimedAt).then(() => attempt(delivery))
      .catch((error: unknown) => log.error({ err: error, deliveryId: delivery.id }, 'delivery attempt crashed; its lease will expire'))
      .finally(() => {
        inFlight -= 1;
        const left = (inFlightByWebhook.get(delivery.webhookId) ?? 1) - 1;
        if (left === 0) inFlightByWebhook.delete(delivery.webhookId);
        else inFlightByWebhook.set(delivery.webhookId, left);
        attempts.delete(task);
        if (waitingForRoom) poke();
      });
    attempts.add(task);
  }

  async function run(): Promise<void> {
    let backoff = 0;
    while (running) {
      try {
        const room = Math.min(maxInFlight - inFlight, FLUSH_SIZE);
        if (room <= 0) {
          waitingForRoom = true;
          await nap(pollIntervalMs);
          waitingForRoom = false;
          continue;
        }
        const saturated = [...inFlightByWebhook].filter(([, n]) => n >= perWebhook).map(([id]) => id)
          .concat(pauses.paused());
        const claiming = performance.now();
        const claimed = await claimDueDeliveries(db, options.secrets, { limit: room, leaseMs, leaseToken: randomUUID(), skipWebhooks: saturated });
        stats.claimMs += Math.round(performance.now() - claiming);
        backoff = 0;
        stats.claimed += claimed.length;
        const claimedAt = Date.now();
        for (const delivery of claimed) launch(delivery, false, claimedAt);
        paced.claimed(claimed);
        if (claimed.length === room) continue;
        // Nothing more due now: sleep until the next scheduled attempt, a NOTIFY or a free slot;
        // at least CLAIM_GAP_MS, so paced deliveries due a few ms apart are claimed a batch at a time.
        const due = await nextDueAt(db);
        const untilDue = due === null ? pollIntervalMs : due.getTime() - Date.now();
        await nap(Math.min(pollIntervalMs, Math.max(untilDue, claimed.length === 0 && untilDue <= 0 ? 50 : CLAIM_GAP_MS)));
      } catch (error) {
        backoff = Math.min(backoff === 0 ? 250 : backoff * 2, 10_000);
        log.warn({ err: error, retryInMs: backoff }, 'claiming deliveries failed');
        await nap(backoff);
      }
    }
  }

  return {
    stats,
    leaseMs,
    reserve(wanted) {
      const granted = running ? Math.max(0, Math.min(wanted, maxInFlight - inFlight)) : 0;
      inFlight += granted;
      return granted;
    },
    release(slots) {
      inFlight -= slots;
      if (slots > 0 && waitingForRoom) poke();
    },
    attemptNow(deliveries) {
      for (const delivery of deliveries) launch(delivery, true);
    },
    async start() {
      if (running) return;
      running = true;
      // Each time LISTEN is back, a claim: deliveries scheduled meanwhile were not notified.
      listener = listenToChannel({ databaseUrl: config.databaseUrl, channel: DELIVERY_CHANNEL, logger: log, onNotify: poke, onListening: poke });
      await listener.firstAttempt;
      loop = run();
      log.info({ maxInFlight, perWebhook, leaseMs, timeoutMs: config.webhookTimeoutMs }, 'webhook dispatcher started');
    },
    async stop() {
      if (!running) return;
      running = false;
      wake?.();
      await loop;
      await Promise.allSettled([...attempts]);
      clearTimeout(flushTimer);
      await flush();
      await listener?.close();
      listener = undefined;
      await sender.close();
      log.info(stats, 'webhook dispatcher stopped');
    },
  };
}
