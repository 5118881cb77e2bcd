// The RFC 3339 date-times Postgres's timestamptz can take: JSON Schema's `date-time` allows more.
// Postgres has no year 0000 and refuses UTC offsets of 16 hours or more; both passed the format
// and failed the statement.

const OFFSET = /(?:[zZ]|([+-])(\d{2}):(\d{2}))$/;

/** True when `value` (already a valid RFC 3339 date-time) is one Postgres can store. */
export function storableTimestamp(value: string): boolean {
  const year = Number(value.slice(0, 4));
  if (!(year >= 1)) return false;
  const offset = OFFSET.exec(value);
  if (offset?.[2] !== undefined && Number(offset[2]) > 15) return false;
  return Number.isFinite(Date.parse(value));
}
