// The processes a benchmark starts, stopped however it ends (finished, failed, interrupted), and its fixed ports checked free before it measures anything.
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

const running = new Set<ChildProcess>();
let hooked = false;

/** Stops every child still running: SIGTERM, which each service answers by shutting down on its own. */
function stopAll(): void {
  for (const child of running) child.kill('SIGTERM');
}

function hook(): void {
  if (hooked) return;
  hooked = true;
  // 'exit' runs on a normal end and on process.exit; a thrown error ends through it too.
  process.on('exit', stopAll);
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    process.once(signal, () => {
      stopAll();
      process.exit(code);
    });
  }
}

/** Keeps `child` to be stopped when the benchmark ends, whichever way; returns it. */
export function track<C extends ChildProcess>(child: C): C {
  hook();
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/**
 * Refuses to go on when `port` is taken: a benchmark that connected to another process there
 * (a leftover of an earlier run) would print that process's figures as its own.
 */
export async function requireFreePort(port: number, what: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => {
      reject(error.code === 'EADDRINUSE'
        ? new Error(`port ${port} (${what}) is taken by another process, perhaps one an earlier benchmark left running `
          + `(\`ss -ltnp 'sport = :${port}'\` names it): stop it, or choose another port`)
        : error);
    });
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
  });
}
