// Group commit: calls for one key that arrive while that key's previous write is in flight share the next write.
import { detached } from './async-context.ts';

export interface GroupCommitOptions {
  /** A group is written by one call; past this size the rest wait for the next one, so a group's latency stays bounded. */
  readonly maxGroup?: number;
  /**
   * When a shared write fails, write each member again on its own, in arrival order, so the
   * failure reaches only the member it belongs to. Without it every member gets the error.
   */
  readonly retryAlone?: boolean;
}

interface Waiter<T, R> {
  readonly item: T;
  resolve(result: R): void;
  reject(error: unknown): void;
}

/**
 * Returns `submit(key, item)`. A call alone is written at once, so grouping adds no delay; calls
 * that find their key's group in flight wait, and the next write takes all of them: under load,
 * many small statements (each a round trip, a plan and a WAL flush) become few larger ones with
 * the same outcomes as one after the other in arrival order. `write` answers one result per item,
 * in order.
 */
export function groupCommit<T, R>(
  write: (key: string, items: readonly T[]) => Promise<readonly R[]>,
  options: GroupCommitOptions = {},
): (key: string, item: T) => Promise<R> {
  const maxGroup = options.maxGroup ?? Number.POSITIVE_INFINITY;
  const waiting = new Map<string, Waiter<T, R>[]>();

  async function writeGroup(key: string, group: readonly Waiter<T, R>[]): Promise<void> {
    const results = await write(key, group.map((waiter) => waiter.item));
    group.forEach((waiter, i) => waiter.resolve(results[i]!));
  }

  async function drain(key: string, queue: Waiter<T, R>[]): Promise<void> {
    while (queue.length > 0) {
      const group = queue.splice(0, maxGroup);
      try {
        await writeGroup(key, group);
      } catch (error) {
        if (!options.retryAlone || group.length === 1) for (const waiter of group) waiter.reject(error);
        else for (const waiter of group) await writeGroup(key, [waiter]).catch(waiter.reject);
      }
    }
    waiting.delete(key);
  }

  return (key, item) => new Promise<R>((resolve, reject) => {
    const queue = waiting.get(key);
    if (queue) {
      queue.push({ item, resolve, reject });
      return;
    }
    const started = [{ item, resolve, reject }];
    waiting.set(key, started);
    // The drain writes later callers' items too: it must not run in the first caller's context.
    void detached(() => drain(key, started));
  });
}
