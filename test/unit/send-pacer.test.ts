// One process's pace of a webhook's sends: turns one interval apart, also after the process stalled, never before the claim's send time, each webhook on its own, a new rate at once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sendPacer } from '../../consumers/webhooks/send-pacer.ts';

const PER_SECOND = 10;
const INTERVAL_MS = 1000 / PER_SECOND;
// The pacer's slack (MAKE_UP_S, 250 ms) is two and a half intervals at this rate: at most that
// many more, and the turn itself, go at once (one more for the clock's milliseconds).
const AT_ONCE = 4;

/** Holds the whole process, as a stalled one is held. */
const stall = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

test('turns come one interval apart, and after a stall the waiting ones go at the pace, not together', async () => {
  const pacer = sendPacer();
  const released: number[] = [];
  await Promise.all(Array.from({ length: 20 }, (_, i) => pacer.turn('hook', PER_SECOND, 0).then(() => {
    released.push(Date.now());
    if (i === 5) stall(1000);
  })));
  for (let i = 0; i < released.length; i++) {
    for (let j = i + 1; j < released.length; j++) {
      const apart = released[j]! - released[i]!;
      assert.ok(j - i <= apart / INTERVAL_MS + AT_ONCE, `turns ${i} and ${j} came ${apart} ms apart`);
    }
  }
});

test('a turn never comes before its send time, and one webhook\'s turns do not hold back another\'s', async () => {
  const pacer = sendPacer();
  const start = Date.now();
  const later = pacer.turn('later', 1, start + 200).then(() => Date.now());
  await pacer.turn('slow', 0.5, 0);
  const slowSecond = pacer.turn('slow', 0.5, 0).then(() => Date.now());
  const other = await pacer.turn('other', 0.5, 0).then(() => Date.now());
  assert.ok(other - start < 1000, `another webhook's first turn came after ${other - start} ms`);
  assert.ok(await later >= start + 200, 'not before the send time');
  assert.ok(await slowSecond - start >= 2000 - 250, 'the slow webhook\'s second turn waited its interval, less the slack');
});

test('a new rate applies from the next turn: after one at 0.01/s, one at 20/s waits 50 ms, not 100 s', async () => {
  const pacer = sendPacer();
  await pacer.turn('changed', 0.01, 0);
  const before = Date.now();
  await pacer.turn('changed', 20, 0);
  assert.ok(Date.now() - before < 1000, `waited ${Date.now() - before} ms`);
});
