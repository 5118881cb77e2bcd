// The local broker script's own logic: the cluster ids it formats storage with.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newClusterId } from '../../scripts/kafka.ts';

test('cluster ids are 16 random bytes in base64url and never start with "-" (the format tool would read an option)', () => {
  const ids = Array.from({ length: 5000 }, newClusterId);
  for (const id of ids) {
    assert.match(id, /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
    assert.equal(Buffer.from(id, 'base64url').length, 16);
  }
  assert.equal(new Set(ids).size, ids.length);
});
