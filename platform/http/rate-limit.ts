// The shared sliding-window rate limit (DESIGN §4): one counter row per key (or client address)
// in Postgres, so every API instance draws on the same budget.
import type { EntityManager } from '@mikro-orm/postgresql';
import { prepared, query } from '../db/sql.ts';

export interface RateLimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds at which the current minute's window ends. */
  resetAt: number;
  retryAfter: number;
}

/** What the counting statement returns: the counters after this request, and its verdict. */
export interface CounterRow {
  count: number;
  prev_count: number;
  allowed: boolean;
}

const WINDOW = 60;

/**
 * The statement that counts one request against a subject, atomically: the upsert locks the
 * subject's row, so concurrent requests on any instance take turns. The row holds this minute's
 * count and the previous minute's; a request is admitted when the previous minute, weighted by
 * how much of it still overlaps the last 60 s, plus this minute, plus the request fits the limit.
 * A refused request is not counted, so a waiting client recovers on time. Parameters: $2 the
 * minute's start, $3 now (Unix seconds); `subject` and `limit` are SQL expressions and `source`
 * the FROM clause that supplies them.
 */
export function countStatement(subject: string, limit: string, source: string): string {
  const current = 'CASE WHEN r.window_start = $2::bigint THEN r.count ELSE 0 END';
  const previous = `CASE WHEN r.window_start = $2::bigint THEN r.prev_count
    WHEN r.window_start = $2::bigint - ${WINDOW} THEN r.count ELSE 0 END`;
  const admitted = `(${previous}) * (${WINDOW} - ($3::float8 - $2::bigint)) / ${WINDOW} + (${current}) + 1 <= ${limit}`;
  return `INSERT INTO rate_limits AS r (subject, window_start, count, prev_count, allowed)
    SELECT ${subject}, $2::bigint, 1, 0, true ${source}
    ON CONFLICT (subject) DO UPDATE SET
      window_start = $2::bigint,
      prev_count = ${previous},
      count = (${current}) + CASE WHEN ${admitted} THEN 1 ELSE 0 END,
      allowed = ${admitted}
    RETURNING r.count, r.prev_count, r.allowed`;
}

/** The window's start for a moment (Unix seconds): the minute it falls in. */
export const windowStart = (now: number): number => Math.floor(now / WINDOW) * WINDOW;

/** The headers' figures from the counters after a request, computed as the statement decided. */
export function rateLimitState(row: CounterRow, limit: number, now: number): RateLimitState {
  const win = windowStart(now);
  const { count, prev_count: previous, allowed } = row;
  const estimate = (previous * (WINDOW - (now - win))) / WINDOW + count;
  let retryAfter = 0;
  if (!allowed) {
    const wait = count + 1 <= limit && previous > 0
      // Room comes back within this minute as the previous one slides out of the window.
      ? win + WINDOW - (WINDOW * (limit - count - 1)) / previous - now
      // This minute alone is full: wait into the next one until it has slid far enough.
      : win + WINDOW + Math.max(0, WINDOW - (WINDOW * (limit - 1)) / Math.max(count, 1)) - now;
    retryAfter = Math.max(1, Math.ceil(wait));
  }
  return { allowed, limit, remaining: Math.max(0, Math.floor(limit - estimate)), resetAt: win + WINDOW, retryAfter };
}

const COUNT_SUBJECT = prepared(countStatement('$1', '$4::integer', ''));

/** Counts one request against `subject` (e.g. `ip:203.0.113.9`) under `limit` per minute. */
export async function countRequest(em: EntityManager, subject: string, limit: number, now: number): Promise<RateLimitState> {
  const [row] = await query<CounterRow>(em, COUNT_SUBJECT, [subject, windowStart(now), now, limit]);
  return rateLimitState(row!, limit, now);
}
