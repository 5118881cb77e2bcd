// bench:traces' import part: `bench/import.ts` run with traces off and on in turn, its figures side by side.
import { spawn } from 'node:child_process';
import { figures } from './figures.ts';
import { track } from './children.ts';

// Smaller than bench:import's own default so that each round of both sides takes minutes, not a quarter-hour.
const LINES = process.env.BENCH_LINES ?? '50000';
const REALISTIC_LINES = process.env.BENCH_REALISTIC_LINES ?? '10000';

/** Runs `bench/import.ts` to its end and gives what it printed; its progress goes to this stderr. */
function importBench(extraEnv: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = track(spawn(process.execPath, ['bench/import.ts'], {
      env: { ...process.env, BENCH_LINES: LINES, BENCH_REALISTIC_LINES: REALISTIC_LINES, BENCH_DB_NAME: 'catalog_bench_traces_import', ...extraEnv },
      stdio: ['ignore', 'pipe', 'inherit'],
    }));
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(output) : reject(new Error(`bench/import.ts exited with ${code}:\n${output}`))));
  });
}

/**
 * Every figure of bench:import with traces off and on, per round, the order alternated so that a
 * machine warming up or slowing down favours neither side; `sink` is the OTLP endpoint and what it received.
 */
export async function traceImports(sink: { url: string; bytes: () => number }, rounds: number): Promise<void> {
  const sides = { off: [] as Map<string, number>[], on: [] as Map<string, number>[] };
  for (let round = 1; round <= rounds; round += 1) {
    for (const side of round % 2 === 1 ? ['off', 'on'] as const : ['on', 'off'] as const) {
      const before = sink.bytes();
      const output = await importBench(side === 'on' ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {});
      const spans = side === 'on' ? `\nspans exported to the sink: ${((sink.bytes() - before) / 1e6).toFixed(1)} MB` : '';
      console.log(`\n── bench:import, round ${round}, traces ${side} ──\n${output.trimEnd()}${spans}`);
      sides[side].push(figures(output));
    }
  }
  console.log(`\nbench:import (${LINES} lines, realistic ${REALISTIC_LINES}): every figure, traces off | on, per round (ratio = on / off; for a time, lower is better)`);
  for (const label of sides.on[0]!.keys()) {
    const pairs = sides.on.map((on, i) => [sides.off[i]!.get(label), on.get(label)] as const);
    if (pairs.some(([off]) => off === undefined)) continue;
    console.log(`${label.padEnd(36)} ${pairs.map(([off, on]) => `${off} | ${on} (${off === 0 ? '–' : (on! / off!).toFixed(2)})`).join('   ')}`);
  }
}
