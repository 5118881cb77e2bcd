// Group commit: calls for one key that arrive while that key's previous write is in flight share the next write.
import { detached } from './async-context.ts';
import { inSpan, traceparent } from './tracing.ts';

export interface GroupCommitOptions {
  /** A group is written by one call; past this size the rest wait for the next one, so a group's latency stays bounded. */
  readonly maxGroup?: number;
  /**
   * When a shared write fails, write each member again on its own, in arrival order, so the
   * failure reaches only the member it belongs to. Without it every member gets the error.
   */
  readonly retryAlone?: boolean;
  /** With traces on, a group's write is a span of this name in its first member's trace, linked to the others'. */
  readonly name?: string;
}

interface Waiter<T, R> {
  readonly item: T;
  /** The submitter's trace context (traces on only). */
  readonly traceparent: string | undefined;
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
    const items = group.map((waiter) => waiter.item);
    const first = group[0]!.traceparent;
    const results = first === undefined ? await write(key, items) : await inSpan(options.name ?? 'group commit', {
      parent: first, links: group.slice(1, 33).map((waiter) => waiter.traceparent ?? null), attributes: { 'catalog.group.size': group.length },
    }, () => write(key, items));
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
    const waiter = { item, traceparent: traceparent(), resolve, reject };
    if (queue) {
      queue.push(waiter);
      return;
    }
    const started = [waiter];
    waiting.set(key, started);
    // The drain writes later callers' items too: it must not run in the first caller's context.
    void detached(() => drain(key, started));
  });
}
