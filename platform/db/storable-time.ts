// The RFC 3339 date-times Postgres's timestamptz can take and the API can write back: JSON Schema's `date-time` allows more.
// Postgres has no year 0000 and refuses UTC offsets of 16 hours or more; both passed the format
// and failed the statement. A time that is past 9999 in UTC (through its offset, or by Postgres
// rounding its fraction to microseconds) was stored, then written back with a five-digit year,
// which is no date-time at all.

const OFFSET = /(?:[zZ]|([+-])(\d{2}):(\d{2}))$/;
const FIRST = Date.parse('0001-01-01T00:00:00.000Z');
// The last millisecond is left out too: its sub-millisecond digits may round up into year 10000.
const LAST = Date.parse('9999-12-31T23:59:59.999Z');

/** True when `value` (already a valid RFC 3339 date-time) is one Postgres can store and the API write back. */
export function storableTimestamp(value: string): boolean {
  const offset = OFFSET.exec(value);
  if (offset?.[2] !== undefined && Number(offset[2]) > 15) return false;
  const at = Date.parse(value);
  return at >= FIRST && at < LAST;
}
