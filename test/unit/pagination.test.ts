// Keyset pagination: cursors round-trip, foreign cursors are a 400, and a page is cut from LIMIT + 1 rows.
import assert from 'node:assert/strict';
import test from 'node:test';
import { decodeCursor, decodeLineCursor, encodeCursor, encodeLineCursor, keysetPage } from '../../domain/pagination.ts';
import { ProductError } from '../../platform/errors.ts';

const refused = (error: unknown) => error instanceof ProductError && error.code === 'validation_error' && error.details?.[0]?.path === 'query.cursor';

test('cursors round-trip their key', () => {
  const key = { at: '2026-01-02 03:04:05.123456+00', id: '0190c6d4-1a2b-7c3d-8e4f-0123456789ab' };
  assert.deepEqual(decodeCursor(encodeCursor(key)), key);
  assert.equal(decodeLineCursor(encodeLineCursor(42)), 42);
});

test('a cursor this list did not issue is a validation error on query.cursor', () => {
  for (const bad of ['', 'not base64 json', encodeLineCursor(3), Buffer.from('{"a":"x","i":"y"}').toString('base64url'), Buffer.from('null').toString('base64url')]) {
    assert.throws(() => decodeCursor(bad), refused, bad);
  }
  for (const bad of ['', encodeCursor({ at: '2026-01-01', id: '0190c6d4-1a2b-7c3d-8e4f-0123456789ab' }), Buffer.from('{"l":-1}').toString('base64url'), Buffer.from('{"l":1.5}').toString('base64url')]) {
    assert.throws(() => decodeLineCursor(bad), refused, bad);
  }
});

test('a page shows `limit` rows and a next cursor only when the extra row came back', () => {
  assert.deepEqual(keysetPage([1, 2, 3], 2, (n) => `after ${n}`), { rows: [1, 2], nextCursor: 'after 2' });
  assert.deepEqual(keysetPage([1, 2], 2, (n) => `after ${n}`), { rows: [1, 2], nextCursor: null });
  assert.deepEqual(keysetPage([], 2, (n: number) => `after ${n}`), { rows: [], nextCursor: null });
});
