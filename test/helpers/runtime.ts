// The runtime the tests start the service under: Node (in this process) or Deno (a child process), chosen by TEST_RUNTIME.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export type Runtime = 'node' | 'deno';
export const RUNTIMES: readonly Runtime[] = ['node', 'deno'];

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * TEST_RUNTIME: `node` (the default) starts the service inside the test process, `deno` starts
 * `cli/main.ts serve` under Deno with the permissions of deno.json's `start` task. The same
 * tests then talk to it over HTTP, Postgres and Kafka alike (`npm run test:deno`).
 */
export function testRuntime(): Runtime {
  const given = process.env.TEST_RUNTIME ?? 'node';
  if (!(RUNTIMES as readonly string[]).includes(given)) throw new Error(`TEST_RUNTIME must be one of ${RUNTIMES.join(', ')}, not "${given}"`);
  return given as Runtime;
}

/** The command that starts `cli/main.ts` under `runtime`; Deno's permissions come from deno.json's `start` task. */
export function runtimeCommand(runtime: Runtime, args: string[]): { command: string; args: string[] } {
  if (runtime === 'node') return { command: process.execPath, args: [join(ROOT, 'cli/main.ts'), ...args] };
  const task = (JSON.parse(readFileSync(join(ROOT, 'deno.json'), 'utf8')) as { tasks: Record<string, string> }).tasks.start!;
  const [deno, ...rest] = task.trim().split(/\s+/);
  const main = rest.indexOf('cli/main.ts');
  return { command: resolve(ROOT, deno!), args: [...rest.slice(0, main), join(ROOT, 'cli/main.ts'), ...args] };
}

/** `cli/main.ts ARGS` under the runtime TEST_RUNTIME names, as `[command, args]` for spawn and execFile. */
export function cliCommand(args: string[]): [string, string[]] {
  const { command, args: full } = runtimeCommand(testRuntime(), args);
  return [command, full];
}
