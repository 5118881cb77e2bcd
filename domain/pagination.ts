// Opaque page cursors of every list: base64url JSON of the last row's sort key (time, id).
import { validationError } from '../platform/errors.ts';

export interface CursorKey {
  /** The sort timestamp as text, exactly as compared (microseconds for database-made times). */
  readonly at: string;
  readonly id: string;
}

export function encodeCursor(key: CursorKey): string {
  return Buffer.from(JSON.stringify({ a: key.at, i: key.id })).toString('base64url');
}

export function decodeCursor(cursor: string): CursorKey {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { a?: unknown; i?: unknown };
    if (typeof parsed.a === 'string' && typeof parsed.i === 'string' && !Number.isNaN(Date.parse(parsed.a))
      && /^[0-9a-f-]{36}$/i.test(parsed.i)) {
      return { at: parsed.a, id: parsed.i };
    }
  } catch {
    // Falls through to the 400 below.
  }
  throw validationError([{ path: 'query.cursor', message: 'is not a cursor returned by this list' }]);
}
