// V8 heap settings of the service's processes, set at run time (measurements: bench/results/2026-11-24-import.md, Memory).
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from './log/logger.ts';

/** Two 32 MB semi-spaces: V8's own maximum where pointers are compressed (Chrome); Node's is twice that. */
export const YOUNG_GENERATION_CAP_BYTES = 64 * 1024 * 1024;

/**
 * What the young generation may hold: both semi-spaces at their capacity. Its size in memory is
 * not that: after a full collection that reduces memory, V8 gives back the idle semi-space and
 * reports half, until the next scavenge takes it again.
 */
const youngGenerationCapacity = () => {
  const space = getHeapSpaceStatistics().find(({ space_name }) => space_name === 'new_space');
  return space ? 2 * (space.space_used_size + space.space_available_size) : 0;
};

/** V8's own --semi-space-growth-factor. */
const V8_SEMI_SPACE_GROWTH_FACTOR = 2;

let held = false;
let released = false;

/**
 * Bounds the heap of a process that runs consumers (once per process):
 * - The old generation grows by at most 2× between full collections. An import keeps a small
 *   live heap, yet V8 lets the old generation grow to four times as much when collecting is cheap,
 *   which is most of the consumers' peak RSS. V8 reads the flag at each collection, so it works
 *   when set at run time.
 * - The young generation never grows past YOUNG_GENERATION_CAP_BYTES. Only a start-up flag sets
 *   its maximum, which a process cannot give itself; but V8 reads the growth factor each time it
 *   grows the young generation. So after each collection the factor is V8's default while a
 *   doubling stays within the cap, and 1 once it would not. V8 grows the young generation only
 *   after as many bytes as it holds have survived scavenges since it last grew, so looking after
 *   each collection is soon enough. When the young generation shrinks (the collection of
 *   releaseStartupMemory, or V8's own when the process idles), it grows again for the next
 *   burst of work. The rule reads the capacity, not the size in memory: the size halves when V8
 *   gives back the idle semi-space, which let a held young generation double past the cap
 *   (bench/results/2026-11-24-import.md, Memory). Deno reports no collections to a PerformanceObserver, so there the
 *   young generation keeps V8's default.
 */
export function holdConsumerHeap(logger: Logger): void {
  if (held) return;
  held = true;
  setFlagsFromString('--heap-growing-percent=100');
  let factor = V8_SEMI_SPACE_GROWTH_FACTOR;
  const check = () => {
    const capacity = youngGenerationCapacity();
    const next = capacity * V8_SEMI_SPACE_GROWTH_FACTOR <= YOUNG_GENERATION_CAP_BYTES ? V8_SEMI_SPACE_GROWTH_FACTOR : 1;
    if (next === factor) return;
    factor = next;
    setFlagsFromString(`--semi-space-growth-factor=${factor}`);
    if (factor === 1) logger.debug({ youngGenerationCapacityBytes: capacity }, 'young generation held at its size');
  };
  check();
  new PerformanceObserver(check).observe({ entryTypes: ['gc'] });
}

/**
 * One full collection that gives memory back, once the process has started (once per process).
 * Loading the modules and connecting leave garbage, and as often as not a young generation grown
 * to 32 MB whose semi-spaces stay resident while the process idles: about 35 MB of an idle
 * process's RSS (bench/results/2026-11-24-import.md). V8's "last resort" collection shrinks the young generation to
 * its starting size and compacts the old one; it grows again when work comes. Only `--expose-gc`
 * gives JavaScript the collector: set at run time, the flag exposes it to the next context
 * created. A runtime that does not expose it is left as it is.
 */
export async function releaseStartupMemory(): Promise<void> {
  if (released) return;
  released = true;
  setFlagsFromString('--expose-gc');
  const gc: unknown = runInNewContext('gc');
  if (typeof gc === 'function') await gc({ type: 'major', execution: 'async', flavor: 'last-resort' });
}
