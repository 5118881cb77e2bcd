// The retry ladder: when the next attempt of a failed delivery is due, or that it is exhausted.

/** ±10 % (docs/webhooks.md, "Retries"), so deliveries that failed together do not come back together. */
export function withJitter(delayMs: number, random: () => number = Math.random): number {
  return Math.round(delayMs * (0.9 + 0.2 * random()));
}

/**
 * Delay before the next attempt after `attemptsMade` attempts failed, or null when the ladder is
 * done (`delaysMs` holds the delay before each attempt, 8 of them: the spec's attempt count).
 * A Retry-After from a 429/503 moves the attempt to at least that time, capped at twice the
 * scheduled delay so a receiver cannot park a delivery for days.
 */
export function nextAttemptDelay(
  attemptsMade: number,
  delaysMs: readonly number[],
  retryAfterMs: number | null = null,
  random: () => number = Math.random,
): number | null {
  if (attemptsMade >= delaysMs.length) return null;
  const scheduled = delaysMs[attemptsMade]!;
  const jittered = withJitter(scheduled, random);
  if (retryAfterMs === null) return jittered;
  return Math.min(Math.max(jittered, retryAfterMs), 2 * scheduled);
}

/** Retry-After as seconds or an HTTP date, in milliseconds from `now`; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (value === undefined || value.trim() === '') return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
