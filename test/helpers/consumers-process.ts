// `catalog serve --role consumers` in a process of its own, for tests that kill one and start another.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { testEnv } from './service.ts';
import { cliCommand } from './runtime.ts';

// Joining the consumer groups can wait out a killed member's session; a safety net, not a speed assumption.
const START_SAFETY_NET_MS = 120_000;

/**
 * Starts the consumers against the test file's database with `env` on top; resolves once its log
 * has `ready` (by default, that they run). `children` tracks it until it exits (kill what is left
 * after the tests).
 */
export async function startConsumersProcess(options: {
  file: string; databaseUrl: string; env: Record<string, string>; name: string; children: Set<ChildProcess>; ready?: string;
}): Promise<ChildProcess> {
  const { file, databaseUrl, env, name, children, ready = 'catalog consumers running' } = options;
  const child = spawn(...cliCommand(['serve', '--role', 'consumers']), {
    env: testEnv(file, databaseUrl, { ...env, LOG_LEVEL: 'info' }), stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  let output = '';
  await new Promise<void>((started, fail) => {
    const timer = setTimeout(() => fail(new Error(`${name} did not start:\n${output.slice(-3000)}`)), START_SAFETY_NET_MS);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (process.env.DEBUG_CHILD) process.stderr.write(`[${name}] ${chunk.toString()}`);
      if (output.includes(ready)) {
        clearTimeout(timer);
        started();
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => fail(new Error(`${name} exited with ${code}:\n${output.slice(-3000)}`)));
  });
  return child;
}
