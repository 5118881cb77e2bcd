// The heap settings of the service's processes (platform/memory.ts), in child processes: the consumers' young generation stops at its cap, and a started process gives back what starting grew.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { YOUNG_GENERATION_CAP_BYTES } from '../../platform/memory.ts';

// Each child's first lines: the module under test; `youngGenerationBytes()`, what the young
// generation holds in memory now; and `work(rounds)`, which allocates like an import does (most
// objects die young, a rolling window survives several scavenges), yielding between rounds so
// the process's observers run, and returns the largest size the young generation had. Its window
// is dropped when it returns.
const PRELUDE = `
  const { holdConsumerHeap, releaseStartupMemory } = await import(${JSON.stringify(new URL('../../platform/memory.ts', import.meta.url).href)});
  const { getHeapSpaceStatistics } = await import('node:v8');
  const youngGenerationBytes = () => getHeapSpaceStatistics().find(({ space_name }) => space_name === 'new_space').space_size;
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
`;

/** Runs `body` after the prelude in a child process and parses what it prints. */
const child = <T>(body: string): T =>
  JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', `${PRELUDE}${body}`], { encoding: 'utf8' })) as T;

const youngGenerationPeak = (hold: boolean) => child<number>(`
  ${hold ? 'holdConsumerHeap({ debug() {} });' : ''}
  process.stdout.write(String(await work(150)));
`);

test('a consumers process stops its young generation at the cap, where Node alone doubles it', () => {
  // The size V8 reports runs a little over the capacity while pages are promoted, so the check is
  // that the doubling past the cap never happens.
  const free = youngGenerationPeak(false);
  const held = youngGenerationPeak(true);
  assert.ok(free >= 2 * YOUNG_GENERATION_CAP_BYTES, `without the setting the young generation reached only ${free} bytes`);
  assert.ok(held < 2 * YOUNG_GENERATION_CAP_BYTES, `the young generation grew to ${held} bytes`);
});

test('a started process gives back the young generation that starting grew', () => {
  // Grown as starting a process does, then released: the young generation's size before and after.
  const { before, after } = child<{ before: number; after: number }>(`
    await work(100);
    const before = youngGenerationBytes();
    await releaseStartupMemory();
    process.stdout.write(JSON.stringify({ before, after: youngGenerationBytes() }));
  `);
  assert.ok(before >= 8 * 1024 * 1024, `the young generation grew only to ${before} bytes`);
  assert.ok(after <= before / 4, `the young generation went from ${before} to ${after} bytes`);
});

test('a held young generation that was released grows back to the cap, and no further', () => {
  // Held at the cap, released, then working again: the largest size before the release, right
  // after it, and the largest since.
  const { held, released, again } = child<{ held: number; released: number; again: number }>(`
    holdConsumerHeap({ debug() {} });
    const held = await work(150);
    await releaseStartupMemory();
    const released = youngGenerationBytes();
    await new Promise((resolve) => setImmediate(resolve));
    const again = await work(150);
    process.stdout.write(JSON.stringify({ held, released, again }));
  `);
  assert.ok(held >= YOUNG_GENERATION_CAP_BYTES && held < 2 * YOUNG_GENERATION_CAP_BYTES, `held at ${held} bytes`);
  assert.ok(released <= YOUNG_GENERATION_CAP_BYTES / 8, `the release left ${released} bytes`);
  assert.ok(again >= YOUNG_GENERATION_CAP_BYTES && again < 2 * YOUNG_GENERATION_CAP_BYTES, `after the release it grew to ${again} bytes`);
});
