// Work that outlives the request, job or transaction that started it runs in the process's root async context (docs/design.md, "Async context").
import { AsyncLocalStorage } from 'node:async_hooks';

// Taken when this module is first evaluated, at start-up, outside any request: the context that
// every piece of background work starts from.
const root = AsyncLocalStorage.snapshot();

/**
 * Runs `work` in the root context, whatever context the caller is in: what it starts (timers,
 * promises, the continuations of its awaits) carries nothing of the caller's request, job or
 * transaction. For work shared by several callers or going on after its caller returns, and for
 * every dynamic `import()` after start-up: on Deno an import leaves the context it was made in
 * as the one the event loop runs later callbacks in (incoming HTTP requests among them), until
 * the next import, so a lazy load inside a transaction would hand it to every later request.
 */
export function detached<R>(work: () => R): R {
  return root(work);
}
