// The heap settings of the service's processes (platform/memory.ts), in child processes: the consumers' young generation stops at its cap, and a started process gives back what starting grew.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { YOUNG_GENERATION_CAP_BYTES } from '../../platform/memory.ts';

// Allocates like an import does (most objects die young, a rolling window survives several
// scavenges), yielding between rounds so the process's observers run, and prints the largest
// size the young generation had.
const CHILD = `
  const { holdConsumerHeap, youngGenerationBytes } = await import(${JSON.stringify(new URL('../../platform/memory.ts', import.meta.url).href)});
  if (process.argv[1] === 'hold') holdConsumerHeap({ debug() {} });
  const window = [];
  let peak = 0;
  for (let round = 0; round < 150; round += 1) {
    for (let i = 0; i < 20000; i += 1) window.push({ line: 'x'.repeat(40) + i, fields: [i, round] });
    if (window.length > 200000) window.splice(0, 100000);
    await new Promise((resolve) => setImmediate(resolve));
    peak = Math.max(peak, youngGenerationBytes());
  }
  process.stdout.write(String(peak));
`;

const youngGenerationPeak = (hold: boolean) =>
  Number(execFileSync(process.execPath, ['--input-type=module', '-e', CHILD, hold ? 'hold' : 'free'], { encoding: 'utf8' }));

test('a consumers process stops its young generation at the cap, where Node alone doubles it', () => {
  // The size V8 reports runs a little over the capacity while pages are promoted, so the check is
  // that the doubling past the cap never happens.
  const free = youngGenerationPeak(false);
  const held = youngGenerationPeak(true);
  assert.ok(free >= 2 * YOUNG_GENERATION_CAP_BYTES, `without the setting the young generation reached only ${free} bytes`);
  assert.ok(held < 2 * YOUNG_GENERATION_CAP_BYTES, `the young generation grew to ${held} bytes`);
});

// Grows the young generation as starting a process does (a rolling window of survivors), drops
// the window, then asks for the release; prints the young generation's size before and after.
const RELEASE_CHILD = `
  const { releaseStartupMemory, youngGenerationBytes } = await import(${JSON.stringify(new URL('../../platform/memory.ts', import.meta.url).href)});
  let window = [];
  for (let round = 0; round < 100; round += 1) {
    for (let i = 0; i < 20000; i += 1) window.push({ line: 'x'.repeat(40) + i, fields: [i, round] });
    if (window.length > 200000) window.splice(0, 100000);
    await new Promise((resolve) => setImmediate(resolve));
  }
  window = undefined;
  const before = youngGenerationBytes();
  await releaseStartupMemory();
  process.stdout.write(JSON.stringify({ before, after: youngGenerationBytes() }));
`;

test('a started process gives back the young generation that starting grew', () => {
  const { before, after } = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', RELEASE_CHILD], { encoding: 'utf8' })) as { before: number; after: number };
  assert.ok(before >= 8 * 1024 * 1024, `the young generation grew only to ${before} bytes`);
  assert.ok(after <= before / 4, `the young generation went from ${before} to ${after} bytes`);
});

// Held at the cap, released, then allocating again: prints the largest size before the release,
// right after it, and the largest since.
const REGROW_CHILD = `
  const { holdConsumerHeap, releaseStartupMemory, youngGenerationBytes } = await import(${JSON.stringify(new URL('../../platform/memory.ts', import.meta.url).href)});
  holdConsumerHeap({ debug() {} });
  const work = async (rounds) => {
    const window = [];
    let peak = 0;
    for (let round = 0; round < rounds; round += 1) {
      for (let i = 0; i < 20000; i += 1) window.push({ line: 'x'.repeat(40) + i, fields: [i, round] });
      if (window.length > 200000) window.splice(0, 100000);
      await new Promise((resolve) => setImmediate(resolve));
      peak = Math.max(peak, youngGenerationBytes());
    }
    return peak;
  };
  const held = await work(150);
  await releaseStartupMemory();
  const released = youngGenerationBytes();
  await new Promise((resolve) => setImmediate(resolve));
  const again = await work(150);
  process.stdout.write(JSON.stringify({ held, released, again }));
`;

test('a held young generation that was released grows back to the cap, and no further', () => {
  const { held, released, again } = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', REGROW_CHILD], { encoding: 'utf8' })) as { held: number; released: number; again: number };
  assert.ok(held >= YOUNG_GENERATION_CAP_BYTES && held < 2 * YOUNG_GENERATION_CAP_BYTES, `held at ${held} bytes`);
  assert.ok(released <= YOUNG_GENERATION_CAP_BYTES / 8, `the release left ${released} bytes`);
  assert.ok(again >= YOUNG_GENERATION_CAP_BYTES && again < 2 * YOUNG_GENERATION_CAP_BYTES, `after the release it grew to ${again} bytes`);
});
