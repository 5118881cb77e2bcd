// Polite downloading: at most N requests in flight in all, at most M to one host, and a host that asked for a pause (Retry-After) waited for.
import pLimit from 'p-limit';
export interface HostGate {
  /**
   * Runs `work` once its host has a free slot and is not paused, then once a slot of the total is
   * free. `work` may give its host slot back early (`doneWithHost`: its requests are over) and go
   * on with its slot of the total.
   */
  run<T>(host: string, work: (doneWithHost: () => void) => Promise<T>): Promise<T>;
  /** The host asked to be left alone for `ms` (429 or 503 with Retry-After): its next requests wait. */
  pause(host: string, ms: number): void;
  /** Sets the total from now on: work past it already running goes on, the next waits for a slot. */
  setTotal(total: number): void;
}

interface HostState {
  /** Jobs of this host inside `run`, waiting or working: the entry is dropped when none are left. */
  users: number;
  active: number;
  pausedUntil: number;
  readonly waiting: Array<() => void>;
}

/**
 * A job waiting for its host holds no slot of the total: a slow or paused host takes at most
 * `perHost` of them, and jobs for other hosts go past its queue.
 */
export function createHostGate(options: { total: number; perHost: number }): HostGate {
  const hosts = new Map<string, HostState>();
  const total = pLimit(options.total);

  const stateOf = (host: string) => {
    let state = hosts.get(host);
    if (!state) hosts.set(host, state = { users: 0, active: 0, pausedUntil: 0, waiting: [] });
    return state;
  };

  async function enterHost(state: HostState): Promise<void> {
    for (;;) {
      const pause = state.pausedUntil - Date.now();
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      else if (state.active >= options.perHost) await new Promise<void>((resolve) => state.waiting.push(resolve));
      else break;
    }
    state.active += 1;
  }

  function leaveHost(host: string, state: HostState): void {
    state.active -= 1;
    state.users -= 1;
    state.waiting.shift()?.();
    // Forget idle hosts, so a catalog naming a million hosts does not keep a million entries.
    if (state.users === 0 && state.pausedUntil <= Date.now()) hosts.delete(host);
  }

  return {
    async run(host, work) {
      const state = stateOf(host);
      state.users += 1;
      await enterHost(state);
      let left = false;
      const doneWithHost = () => {
        if (left) return;
        left = true;
        leaveHost(host, state);
      };
      try {
        return await total(() => work(doneWithHost));
      } finally {
        doneWithHost();
      }
    },
    pause(host, ms) {
      const state = stateOf(host);
      state.pausedUntil = Math.max(state.pausedUntil, Date.now() + ms);
    },
    setTotal(n) {
      total.concurrency = n;
    },
  };
}
