// Ids: UUIDv7 as RFC 9562 lays it out, in the order they were made, from random bits drawn from a pool.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validate, version } from 'uuid';
import { newId } from '../../platform/ids.ts';

const timestampOf = (id: string) => Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);

test('ids are version 7 UUIDs carrying the time they were made', () => {
  const before = Date.now();
  const id = newId();
  const after = Date.now();
  assert.ok(validate(id), id);
  assert.equal(version(id), 7);
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.ok(timestampOf(id) >= before && timestampOf(id) <= after + 1, `${timestampOf(id)} not within ${before}..${after}`);
});

test('ids sort in the order they were made, many to a millisecond and across refills of the pool', () => {
  // Far more ids than one pool holds, most of them sharing a millisecond with others.
  const ids = Array.from({ length: 20_000 }, () => newId());
  const sorted = [...ids].sort();
  assert.deepEqual(sorted, ids);
  assert.equal(new Set(ids).size, ids.length);
  const perMillisecond = ids.length / (new Set(ids.map(timestampOf)).size);
  assert.ok(perMillisecond > 1, 'the test must make several ids within one millisecond');
});

test('the random part differs from id to id (the pool is not handed out twice)', () => {
  const randomParts = Array.from({ length: 2_000 }, () => newId().replaceAll('-', '').slice(20));
  assert.equal(new Set(randomParts).size, randomParts.length);
});
