// Request date-times Postgres could not store, or the API could not write back as a date-time, are refused at validation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { storableTimestamp } from '../../platform/db/storable-time.ts';

test('times from year 1 to the end of year 9999 in UTC are storable', () => {
  for (const value of ['0001-01-01T00:00:00Z', '2026-11-24T12:00:00.123456Z', '9999-12-31T23:59:59.998Z', '2026-01-01T00:00:00+15:59']) {
    assert.equal(storableTimestamp(value), true, value);
  }
});

test('year 0, offsets of 16 hours or more, and times past 9999 in UTC are not', () => {
  for (const value of ['0000-12-31T23:59:59Z', '0001-01-01T00:00:00+01:00', '2026-01-01T00:00:00+16:00',
    '9999-12-31T23:59:59.9999999Z', '9999-12-31T23:59:59.999999999Z', '9999-12-31T20:00:00-05:00']) {
    assert.equal(storableTimestamp(value), false, value);
  }
});
