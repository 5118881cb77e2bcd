// Group commit: calls of one key that arrive while its write is in flight share the next write, in order, each with its own result.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupCommit } from '../../platform/group-commit.ts';

/** A write whose calls stay in flight until the test settles them, and the groups it was given. */
function heldWrites() {
  const calls: Array<{ key: string; items: readonly string[]; settle: (error?: Error) => void }> = [];
  const write = (key: string, items: readonly string[]) => new Promise<string[]>((resolve, reject) => {
    calls.push({ key, items, settle: (error) => (error ? reject(error) : resolve(items.map((item) => item.toUpperCase()))) });
  });
  return { calls, write };
}

const turn = () => new Promise((done) => setImmediate(done));

test('calls that arrive while their key is in flight share the next write, in arrival order, each with its own result', async () => {
  const { calls, write } = heldWrites();
  const submit = groupCommit(write);
  const a = submit('k', 'a');
  const others = [submit('k', 'b'), submit('k', 'c'), submit('other', 'x')];
  assert.deepEqual(calls.map((c) => [c.key, c.items]), [['k', ['a']], ['other', ['x']]], 'a call alone is written at once; another key is not held back');
  calls[0]!.settle();
  assert.equal(await a, 'A');
  await turn();
  assert.deepEqual(calls.map((c) => c.items), [['a'], ['x'], ['b', 'c']]);
  calls[1]!.settle();
  calls[2]!.settle();
  assert.deepEqual(await Promise.all(others), ['B', 'C', 'X']);
});

test('a group stops at maxGroup; the rest wait for the next write', async () => {
  const { calls, write } = heldWrites();
  const submit = groupCommit(write, { maxGroup: 2 });
  const all = ['a', 'b', 'c', 'd'].map((item) => submit('k', item));
  for (let i = 0; i < 3; i += 1) {
    while (calls.length <= i) await turn();
    calls[i]!.settle();
  }
  assert.deepEqual(await Promise.all(all), ['A', 'B', 'C', 'D']);
  assert.deepEqual(calls.map((c) => c.items), [['a'], ['b', 'c'], ['d']]);
});

/** b and c queue behind a, and their shared write fails; answers b's and c's outcomes as messages or results. */
async function failedGroup(options: { retryAlone?: boolean }) {
  const { calls, write } = heldWrites();
  const submit = groupCommit(write, options);
  const first = submit('k', 'a');
  const rest = Promise.all(['b', 'c'].map((item) => submit('k', item).catch((error: Error) => error.message)));
  calls[0]!.settle();
  await first;
  while (calls.length < 2) await turn();
  calls[1]!.settle(new Error('the group failed'));
  return { calls, rest };
}

test('a failed shared write is written again member by member with retryAlone, so its failure reaches only its own caller', async () => {
  const { calls, rest } = await failedGroup({ retryAlone: true });
  while (calls.length < 3) await turn();
  calls[2]!.settle(new Error('b is bad'));
  while (calls.length < 4) await turn();
  calls[3]!.settle();
  assert.deepEqual(await rest, ['b is bad', 'C']);
  assert.deepEqual(calls.map((c) => c.items), [['a'], ['b', 'c'], ['b'], ['c']]);
});

test('without retryAlone every member of a failed write gets its error', async () => {
  const { calls, rest } = await failedGroup({});
  assert.deepEqual(await rest, ['the group failed', 'the group failed']);
  assert.equal(calls.length, 2);
});
