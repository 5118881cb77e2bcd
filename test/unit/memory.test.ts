// The consumers' heap settings (platform/memory.ts), in child processes: the young generation stops at its cap.
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
