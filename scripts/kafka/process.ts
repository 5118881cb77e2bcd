// Process plumbing for scripts/kafka.ts: is a pid alive, is a port open, a start lock between processes.
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { accepts } from '../../platform/kafka/probe.ts';

/** Whether something listens on the loopback port. */
export const portOpen = (port: number, timeoutMs = 500): Promise<boolean> => accepts('127.0.0.1', port, timeoutMs);

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // An exited child not yet reaped still accepts signal 0.
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\)\s*/, '').startsWith('Z');
  } catch {
    return true;
  }
}

/** Takes the start lock, or returns false when a live process holds it (it is starting the broker). */
export function tryLock(lockFile: string): boolean {
  for (;;) {
    try {
      writeFileSync(lockFile, `${process.pid}\n`, { flag: 'wx' });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let holder = 0;
    let ageMs = 0;
    try {
      holder = Number(readFileSync(lockFile, 'utf8').trim());
      ageMs = Date.now() - statSync(lockFile).mtimeMs;
    } catch {
      continue; // released meanwhile: try again
    }
    if (holder > 0 && isAlive(holder)) return false;
    // An empty file a moment old is a holder between create and write, not a stale lock.
    if (!(holder > 0) && ageMs < 1000) return false;
    rmSync(lockFile, { force: true });
  }
}
