// Keyset pagination of every list: opaque cursors (base64url JSON of the last row's sort key) and the page cut.
import { sql } from '../platform/db/sql.ts';
import type { SqlFragment } from '../platform/db/sql.ts';
import { validationError } from '../platform/errors.ts';
import { isId } from '../platform/ids.ts';

/** The sort key of lists ordered by a time and an id. */
export interface CursorKey {
  /** The sort timestamp as text, exactly as compared (microseconds for database-made times). */
  readonly at: string;
  readonly id: string;
}

const encode = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** The cursor's content when `read` accepts it; otherwise the 400 every list answers to a cursor it did not issue. */
function decode<T>(cursor: string, read: (parsed: Record<string, unknown>) => T | undefined): T {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    const key = parsed !== null && typeof parsed === 'object' ? read(parsed as Record<string, unknown>) : undefined;
    if (key !== undefined) return key;
  } catch {
    // Falls through to the 400 below.
  }
  throw validationError([{ path: 'query.cursor', message: 'is not a cursor returned by this list' }]);
}

export function encodeCursor(key: CursorKey): string {
  return encode({ a: key.at, i: key.id });
}

export function decodeCursor(cursor: string): CursorKey {
  return decode(cursor, ({ a, i }) => (typeof a === 'string' && typeof i === 'string' && !Number.isNaN(Date.parse(a))
    && isId(i) ? { at: a, id: i } : undefined));
}

/** The cursor of lists ordered by an id alone (the event log: UUIDv7 ids sort by time). */
export function encodeIdCursor(id: string): string {
  return encode({ e: id });
}

export function decodeIdCursor(cursor: string): string {
  return decode(cursor, ({ e }) => (typeof e === 'string' && isId(e) ? e.toLowerCase() : undefined));
}

/** The cursor of the event log read newest first: the oldest event shown, a page goes on before it. */
export function encodeBeforeCursor(id: string): string {
  return encode({ b: id });
}

export function decodeBeforeCursor(cursor: string): string {
  return decode(cursor, ({ b }) => (typeof b === 'string' && isId(b) ? b.toLowerCase() : undefined));
}

/** The cursor of lists ordered by line number (an import's line errors). */
export function encodeLineCursor(lineNumber: number): string {
  return encode({ l: lineNumber });
}

export function decodeLineCursor(cursor: string): number {
  return decode(cursor, ({ l }) => (typeof l === 'number' && Number.isInteger(l) && l >= 0 ? l : undefined));
}

/**
 * The condition "after the cursor" on `(time, id)` columns: `>` for ascending lists, `<` for
 * descending ones. The row pair comparison follows the index on the same pair, so a page costs
 * the same wherever it starts, and pages never skip or repeat a row.
 */
export function afterCursor(cursor: string, columns: SqlFragment, direction: 'asc' | 'desc'): SqlFragment {
  const key = decodeCursor(cursor);
  return sql`(${columns}) ${sql.raw(direction === 'asc' ? '>' : '<')} (${key.at}::timestamptz, ${key.id}::uuid)`;
}

/**
 * Cuts a page from `rows`, fetched with LIMIT `limit + 1`: the extra row only tells that there
 * is a next page, whose cursor is the last shown row's key.
 */
export function keysetPage<Row>(rows: readonly Row[], limit: number, cursorOf: (row: Row) => string): { rows: Row[]; nextCursor: string | null } {
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return { rows: shown, nextCursor: rows.length > limit && last !== undefined ? cursorOf(last) : null };
}
