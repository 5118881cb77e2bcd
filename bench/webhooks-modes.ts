// `npm run bench:webhooks -- --modes`: the same burst of events delivered unordered, through a filter, and in order per resource, in one run, rates side by side.
import { spawnSync } from 'node:child_process';

const EVENTS = process.env.BENCH_MODE_EVENTS ?? '4000';
const RESOURCES = process.env.BENCH_MODE_RESOURCES ?? '200';
const MODES: ReadonlyArray<readonly [string, string[]]> = [
  ['unordered', []],
  ['filtered (3 conditions)', ['--filter']],
  ['ordered per resource', ['--ordered']],
];

/** Runs each mode as its own bench:webhooks (fresh database, topics and consumers process); returns the exit code. */
export async function compareModes(): Promise<number> {
  process.stdout.write(`${EVENTS} events at once over ${RESOURCES} resources, 4 webhooks; each mode in its own run:\n`);
  const rates: Array<[string, number]> = [];
  for (const [name, flags] of MODES) {
    const run = spawnSync(process.execPath, ['bench/webhooks.ts', '--rate', '0', '--events', EVENTS, '--resources', RESOURCES, ...flags], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const line = run.stdout.split('\n').find((l) => l.includes('deliveries/s')) ?? run.stdout;
    process.stdout.write(`${name.padEnd(24)} ${line.trim()}\n`);
    if (run.status !== 0) return run.status ?? 1;
    rates.push([name, Number(/→ (\d+) deliveries\/s/.exec(line)?.[1])]);
  }
  const [, unordered] = rates[0]!;
  for (const [name, rate] of rates) process.stdout.write(`${name.padEnd(24)} ${String(rate).padStart(6)} deliveries/s  ${Math.round((rate / unordered) * 100)} % of unordered\n`);
  process.stdout.write('target: ordered ≥ 50 % of unordered\n');
  return 0;
}
