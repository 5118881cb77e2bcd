// Runs the commands of `npm run test:containers` (scripts/test-containers.ts): output shown, captured, or logged to a file.
import { spawn } from 'node:child_process';
import type { SpawnOptions } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

export const say = (line: string) => process.stdout.write(`test:containers: ${line}\n`);
export const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Output to this file instead of ours (long build logs); its tail goes into the error. */
  logFile?: string;
  /** Output captured and returned instead of shown. */
  capture?: boolean;
}

/** Runs a command to its end; throws with its exit and (for a log file) the log's tail when it fails. */
export async function run(command: string, args: string[], options: RunOptions = {}): Promise<string> {
  const stdio: SpawnOptions['stdio'] = options.capture || options.logFile ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'inherit', 'inherit'];
  const child = spawn(command, args, { cwd: ROOT, env: options.env ?? process.env, stdio });
  const out: Buffer[] = [];
  if (options.logFile) {
    const log = createWriteStream(options.logFile, { flags: 'a' });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
  } else if (options.capture) {
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  }
  const code = await new Promise<number | string>((done) => {
    child.once('error', (error) => done(error.message));
    child.once('close', (status, signal) => done(status ?? String(signal)));
  });
  if (code !== 0) {
    const tail = options.logFile && existsSync(options.logFile) ? `\n${readFileSync(options.logFile, 'utf8').split('\n').slice(-60).join('\n')}` : '';
    throw new Error(`${command} ${args.join(' ')} failed (${code})${tail}`);
  }
  return Buffer.concat(out).toString('utf8');
}
