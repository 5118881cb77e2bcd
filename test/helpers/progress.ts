// Waiting on work that takes as long as the machine makes it: fail only when it stops moving, never at a fixed deadline.

/**
 * Polls `check` until it answers true. Fails only when `progress` (anything JSON can compare,
 * e.g. a job's counters) stays the same for `stallMs`: a busy machine makes work slower, not
 * stuck, so the bound is on a stall, and callers derive it from the configuration of what they wait on.
 */
export async function waitWhileProgressing(what: string, check: () => Promise<boolean>, progress: () => Promise<unknown>, stallMs: number): Promise<void> {
  let last: string | undefined;
  let since = Date.now();
  while (!(await check())) {
    const now = JSON.stringify(await progress());
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since > stallMs) {
      throw new Error(`no progress towards ${what} for ${stallMs} ms: ${now}`);
    }
    await new Promise((done) => setTimeout(done, 100));
  }
}
