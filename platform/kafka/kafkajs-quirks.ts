// Works around kafkajs 2.2.4 habits that are harmless but noisy on Node 24.
let installed = false;

/**
 * kafkajs' request queue arms `setTimeout(fn, throttledUntil - Date.now())` with throttledUntil = -1,
 * a huge negative delay Node ≥ 23 reports as TimeoutNegativeWarning (it clamps to 1 ms, as kafkajs
 * expects). Drop only that warning type; every other warning passes through unchanged.
 */
export function silenceKafkajsTimerWarning(): void {
  if (installed) return;
  installed = true;
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const option = rest[0];
    const type = typeof warning !== 'string' ? warning.name
      : typeof option === 'string' ? option : (option as { type?: string } | undefined)?.type;
    if (type === 'TimeoutNegativeWarning') return;
    emit(warning, ...rest);
  }) as typeof process.emitWarning;
}
