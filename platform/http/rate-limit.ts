// The shared sliding-window rate limit (docs/design.md, "Rate limits"): one counter row per key (or client address)
// in Postgres, so every API instance draws on the same budget.
import { prepared, query, sql } from '../db/sql.ts';
import type { Db, SqlFragment } from '../db/sql.ts';

export interface RateLimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds at which the window has room for the full limit again. */
  resetAt: number;
  retryAfter: number;
}

/** What the counting statement returns: the counters after it, and how many it admitted. */
export interface CounterRow {
  count: number;
  prev_count: number;
  admitted: number;
}

const WINDOW = 60;

/** One counting: `requests` requests at `now` (Unix seconds). */
export interface Counting {
  readonly now: number;
  readonly requests: number;
}

/**
 * The statement that counts requests against a subject, atomically: the upsert locks the
 * subject's row, so concurrent statements on any instance take turns. The row holds this
 * minute's count and the previous minute's; the estimate is the previous minute, weighted by how
 * much of it still overlaps the last 60 s, plus this minute. Requests are admitted in order while
 * the estimate plus one fits the limit, so the statement admits as many as one statement per
 * request would. Refused requests are not counted, so a waiting client recovers on time.
 * `subject` and `limit` (at least 1) are SQL expressions and `source` the FROM clause that
 * supplies them.
 */
export function countStatement(subject: SqlFragment, limit: SqlFragment, source: SqlFragment, counting: Counting): SqlFragment {
  const start = sql`${windowStart(counting.now)}::bigint`;
  const now = sql`${counting.now}::float8`;
  const requests = sql`${counting.requests}::integer`;
  const current = sql`CASE WHEN r.window_start = ${start} THEN r.count ELSE 0 END`;
  const previous = sql`CASE WHEN r.window_start = ${start} THEN r.prev_count
    WHEN r.window_start = ${start} - ${sql.lit(WINDOW)} THEN r.count ELSE 0 END`;
  const estimate = sql`(${previous}) * (${sql.lit(WINDOW)} - (${now} - ${start})) / ${sql.lit(WINDOW)} + (${current})`;
  const admitted = sql`greatest(0, least(${requests}, floor(${limit} - (${estimate}))::integer))`;
  return sql`INSERT INTO rate_limits AS r (subject, window_start, count, prev_count, admitted)
    SELECT ${subject}, ${start}, least(${requests}, ${limit}), 0, least(${requests}, ${limit}) ${source}
    ON CONFLICT (subject) DO UPDATE SET
      window_start = ${start},
      prev_count = ${previous},
      count = (${current}) + ${admitted},
      admitted = ${admitted}
    RETURNING r.count, r.prev_count, r.admitted`;
}

/** The window's start for a moment (Unix seconds): the minute it falls in. */
export const windowStart = (now: number): number => Math.floor(now / WINDOW) * WINDOW;

/**
 * Each counted request's figures, in the order the statement counted them: the first
 * `admitted` passed, each seeing the count as it stood after itself; the rest were refused.
 */
export function rateLimitStates(row: CounterRow, limit: number, now: number, requests: number): RateLimitState[] {
  const before = row.count - row.admitted;
  return Array.from({ length: requests }, (_, i) =>
    i < row.admitted ? stateAfter(before + i + 1, row.prev_count, true, limit, now) : stateAfter(row.count, row.prev_count, false, limit, now));
}

function stateAfter(count: number, previous: number, allowed: boolean, limit: number, now: number): RateLimitState {
  const win = windowStart(now);
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
  // The full limit is back once nothing counted is left in the window: this minute's requests
  // slide out by the end of the next minute, the previous minute's by the end of this one.
  const resetAt = count > 0 ? win + 2 * WINDOW : previous > 0 ? win + WINDOW : Math.ceil(now);
  return { allowed, limit, remaining: Math.max(0, Math.floor(limit - estimate)), resetAt, retryAfter };
}

/** Counts `requests` requests (default one) against `subject` (e.g. `ip:203.0.113.9`) under `limit` per minute. */
export async function countRequests(db: Db, subject: string, limit: number, now: number, requests = 1): Promise<RateLimitState[]> {
  const statement = countStatement(sql`${subject}`, sql`${limit}::integer`, sql``, { now, requests });
  const [row] = await query<CounterRow>(db, 'rate_limit.count', prepared(statement));
  return rateLimitStates(row!, limit, now, requests);
}
