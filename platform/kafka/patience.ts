// Work that needs the Kafka cluster, started once the cluster answers: a process starts, and serves what needs only Postgres, while the broker is away.
import type { Logger } from '../log/logger.ts';

export interface PatientStart<T> {
  /** Settles after the first attempt: true when it started, false when it goes on trying in the background. */
  readonly firstAttempt: Promise<boolean>;
  /** The started work; undefined when stop() came first. */
  readonly started: Promise<T | undefined>;
  /** Stops trying; an attempt in flight finishes, and what it started is still handed to `started`. */
  stop(): void;
}

export interface PatienceOptions {
  /** The first wait after a failed attempt; it doubles up to `maxDelayMs`. */
  readonly firstDelayMs?: number;
  readonly maxDelayMs?: number;
}

/**
 * Runs `start` until it succeeds, waiting longer between attempts up to `maxDelayMs`. The first
 * failure of an episode is logged at warn with its cause, the rest at debug, and the recovery at
 * info: one outage, two lines.
 */
export function startWhenKafkaAnswers<T>(what: string, start: () => Promise<T>, logger: Logger, options: PatienceOptions = {}): PatientStart<T> {
  const { firstDelayMs = 1000, maxDelayMs = 30_000 } = options;
  let stopped = false;
  let wake: (() => void) | undefined;
  let settleFirst!: (ok: boolean) => void;
  const firstAttempt = new Promise<boolean>((resolve) => { settleFirst = resolve; });

  const started = (async (): Promise<T | undefined> => {
    let failures = 0;
    for (let delay = firstDelayMs; !stopped; delay = Math.min(delay * 2, maxDelayMs)) {
      try {
        const value = await start();
        if (failures > 0) logger.info({ what, failedAttempts: failures }, `Kafka answers again: ${what} started`);
        settleFirst(true);
        return value;
      } catch (error) {
        failures += 1;
        if (failures === 1) logger.warn({ err: error, what }, `Kafka does not answer: ${what} starts once it does; attempts go on in the background`);
        else logger.debug({ err: error, what, failures }, `Kafka still does not answer: ${what} waits`);
        settleFirst(false);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        timer.unref();
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    settleFirst(false);
    return undefined;
  })();

  return {
    firstAttempt,
    started,
    stop() {
      stopped = true;
      wake?.();
    },
  };
}
