// Plumbing for scripts/postgres-replica.ts: one Postgres server folder run with Debian's binaries as the `postgres` user (start, stop, pid, log, queries).
import { execFile } from 'node:child_process';
import { chownSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { isAlive } from '../kafka/process.ts';

const DEBIAN_BIN_DIR = '/usr/lib/postgresql/15/bin';
const PG_CTL_TIMEOUT_S = 30;

/** One server of the pair: its folder, port, log, and the private folder of its Unix socket. */
export interface Server {
  readonly name: 'primary' | 'standby';
  readonly dir: string;
  readonly port: number;
  readonly logFile: string;
  readonly socketDir: string;
  readonly binDir: string;
}

export const urlOf = (port: number): string => `postgres://postgres@127.0.0.1:${port}/postgres`;
export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** Debian's folder when present; elsewhere the binaries on PATH. */
export const defaultBinDir = (): string => (existsSync(join(DEBIAN_BIN_DIR, 'pg_ctl')) ? DEBIAN_BIN_DIR : '');

// Postgres refuses to run as root; as root every binary runs as `postgres`, otherwise as ourselves.
const asRoot = (): boolean => process.getuid?.() === 0;

/** Runs a Postgres binary (or `test`) as the server's user; rejects with its output on failure. */
export function runAsPostgres(binDir: string, command: string, args: string[], timeoutMs = (PG_CTL_TIMEOUT_S + 15) * 1000): Promise<string> {
  const file = binDir && command !== 'test' ? join(binDir, command) : command;
  const [program, argv] = asRoot() ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
  return new Promise((done, fail) => {
    execFile(program, argv, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) fail(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}${stderr}`.trim()));
      else done(stdout);
    });
  });
}

/** As root, hands a folder we created to `postgres`, which must own its data, sockets and logs. */
export async function giveToPostgres(dir: string): Promise<void> {
  if (!asRoot()) return;
  const id = (flag: string) => new Promise<number>((done, fail) => {
    execFile('id', [flag, 'postgres'], (error, stdout) => (error ? fail(new Error('no `postgres` user: Postgres cannot run as root')) : done(Number(stdout.trim()))));
  });
  chownSync(dir, await id('-u'), await id('-g'));
  await runAsPostgres('', 'test', ['-w', dir]).catch(() => {
    throw new Error(`the postgres user cannot write ${dir} (a parent folder it cannot enter?): pick a folder under /tmp`);
  });
}

/** The postmaster's pid when that process is alive and serves this folder (guards against pid reuse). */
export function serverPid(server: Server): number | undefined {
  const pidFile = join(server.dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined;
  try {
    if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(server.dir)) return undefined;
  } catch {
    // No /proc (not Linux): trust the pid file.
  }
  return pid;
}

export function logTail(server: Server, lines = 30): string {
  if (!existsSync(server.logFile)) return `(no log at ${server.logFile})`;
  return readFileSync(server.logFile, 'utf8').split('\n').slice(-lines).join('\n');
}

/** Starts the server unless it runs; pg_ctl -w returns once it accepts connections (a standby: read-only ones). */
export async function startServer(server: Server): Promise<boolean> {
  if (serverPid(server) !== undefined) return false;
  try {
    await runAsPostgres(server.binDir, 'pg_ctl', ['start', '-D', server.dir, '-l', server.logFile, '-w', '-t', String(PG_CTL_TIMEOUT_S),
      '-o', `-p ${server.port} -k ${server.socketDir}`]);
  } catch (error) {
    throw new Error(`the ${server.name} on port ${server.port} did not start: ${(error as Error).message}\nlast lines of ${server.logFile}:\n${logTail(server)}`);
  }
  return true;
}

/**
 * Stops the server: `fast` rolls back sessions and writes a shutdown checkpoint, `immediate` is
 * a crash (recovery at the next start). A fast stop that overruns its bound becomes immediate,
 * and a postmaster still alive after that is killed: a stop never hangs.
 */
export async function stopServer(server: Server, mode: 'fast' | 'immediate'): Promise<boolean> {
  const pid = serverPid(server);
  if (pid === undefined) return false;
  const stop = (how: string) => runAsPostgres(server.binDir, 'pg_ctl', ['stop', '-D', server.dir, '-m', how, '-w', '-t', String(PG_CTL_TIMEOUT_S)]);
  await stop(mode).catch(() => (mode === 'fast' ? stop('immediate') : undefined)).catch(() => undefined);
  if (isAlive(pid)) {
    try { process.kill(pid, 'SIGKILL'); } catch { /* gone meanwhile */ }
    const deadline = Date.now() + 10_000;
    while (isAlive(pid) && Date.now() < deadline) await sleep(100);
    if (isAlive(pid)) throw new Error(`the ${server.name} (pid ${pid}) outlived pg_ctl stop and SIGKILL`);
  }
  return true;
}

/** Runs one statement on a fresh connection that gives up after a few seconds rather than hang. */
export async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000, query_timeout: 10_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Polls `check` until it holds; past the deadline fails saying what it waited for, with the logs. */
export async function until(check: () => Promise<boolean>, what: string, timeoutMs: number, servers: Server[]): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    await sleep(100);
  }
  const tails = servers.map((s) => `last lines of ${s.logFile}:\n${logTail(s)}`).join('\n');
  throw new Error(`${what}: not within ${timeoutMs / 1000} s${last ? ` (last error: ${(last as Error).message})` : ''}\n${tails}`);
}
