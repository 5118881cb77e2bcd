// The import consumer: jobs from catalog.imports.v1, plus a sweeper for lapsed upload windows and orphaned jobs.
import { headerText, inSpan, traceparent } from '../../platform/tracing.ts';
import type { EachMessagePayload } from 'kafkajs';
import { recordProcessingFailure } from '../../domain/imports/parking.ts';
import { processImport } from '../../domain/imports/process.ts';
import type { ImportMessage } from '../../domain/imports/job-store.ts';
import { expireUploadWindows, jobsToResume } from '../../domain/imports/sweep.ts';
import { detached } from '../../platform/async-context.ts';
import type { Config } from '../../platform/config/config.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import { isConnectionError } from '../../platform/db/connections.ts';
import { isId } from '../../platform/ids.ts';
import type { Orm } from '../../platform/db/orm.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import type { Logger } from '../../platform/log/logger.ts';
import type { Metrics } from '../../platform/metrics.ts';
import type { BatchCounts } from '../../domain/imports/job-store.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import type { RunningWork } from '../../platform/running-work.ts';

// Often enough that a crashed or full consumer's job starts within seconds in a process with room.
export const SWEEP_MS = 3000;
// A queued job's message normally arrives within a second; past this any sweeper with room takes it.
export const QUEUED_GRACE_SECONDS = 2;
// A job's source address: until each answer's headers, and between two chunks of its body.
const SOURCE_TIMEOUT_MS = 30_000;

export interface ImportConsumer {
  stop(): Promise<void>;
}

export interface ImportConsumerOptions {
  readonly config: Config;
  readonly kafka: KafkaClient;
  readonly orm: Orm;
  readonly storage: ObjectStorage;
  /** Opens a source's headers, sealed at rest. */
  readonly secrets: SecretBox;
  /** The process's metrics: each committed batch's lines are counted. */
  readonly metrics?: Metrics;
  readonly logger: Logger;
  /** The import jobs running in this process, counted for the media consumer to make room. */
  readonly imports?: RunningWork;
}

/** Adds a committed batch's lines to the metrics, by outcome. */
const countLines = (metrics: Metrics) => (counts: BatchCounts) => {
  for (const outcome of ['created', 'updated', 'unchanged', 'failed'] as const) {
    if (counts[outcome] > 0) metrics.importLines.inc({ outcome }, counts[outcome]);
  }
};

export async function startImportConsumer(options: ImportConsumerOptions): Promise<ImportConsumer> {
  const log = options.logger.child({ component: 'import-consumer' });
  const { storage } = options;
  const running = new Map<string, Promise<unknown>>();
  const capacity = options.config.capacity.importJobs;
  let stopping = false;

  /**
   * What a failed run leaves behind. It never throws: the sweeper takes an unfinished job up again
   * within SWEEP_MS, so a failure neither restarts the Kafka consumer (which would hold up every
   * other catalog's jobs) nor is lost. A lost connection only delays the job; any other failure
   * counts towards parking it (recordProcessingFailure).
   */
  const afterFailure = async (jobId: string, error: unknown): Promise<string> => {
    if (isConnectionError(error)) {
      log.warn({ err: error, jobId }, 'import interrupted by a lost database connection; it resumes from its last batch');
      return 'interrupted';
    }
    log.error({ err: error, jobId }, 'import processing failed');
    try {
      const parked = await recordProcessingFailure(options.orm.em.fork(), jobId);
      if (parked) log.error({ jobId }, 'import parked as failed: its processing failed for good');
      return parked ? 'parked' : 'failed';
    } catch (recordError) {
      log.warn({ err: recordError, jobId }, 'could not count the import failure; the job is retried');
      return 'failed';
    }
  };

  /**
   * Starts a job in this process unless it runs here already or the process is full
   * (IMPORT_JOBS_PER_PROCESS); the processing lock keeps other processes off it. A run belongs to
   * the process, not to the Kafka partition that announced it: a rebalance does not touch it, and
   * a stopping process leaves it at its batch boundary for another one's sweeper. Its span
   * continues the message that announced it, or begins a trace when a sweep takes it.
   */
  const runJob = (jobId: string, started?: string): Promise<unknown> | undefined => {
    const current = running.get(jobId);
    if (current) return current;
    if (running.size >= capacity) return undefined;
    const ended = options.imports?.begin();
    const run = detached(() => inSpan('import job', { parent: started ?? null, attributes: { 'catalog.import.id': jobId } }, () => processImport({
      orm: options.orm, storage, secrets: options.secrets, databaseUrl: options.config.databaseUrl, logger: log, mediaRefreshAgeHours: options.config.media.refreshAgeHours,
      source: { allowPrivate: options.config.outboundAllowPrivate, timeoutMs: SOURCE_TIMEOUT_MS },
      stopping: () => stopping,
      ...(options.metrics ? { onCommitted: countLines(options.metrics) } : {}),
    }, jobId)))
      .catch(async (error: unknown) => {
        const outcome = await afterFailure(jobId, error);
        if (outcome === 'failed' || outcome === 'parked') options.metrics?.importFailures.inc({ outcome });
        return outcome;
      })
      .finally(() => {
        running.delete(jobId);
        ended?.();
      });
    running.set(jobId, run);
    return run;
  };

  const sweep = async () => {
    try {
      const expired = await expireUploadWindows(options.orm.em.fork());
      if (expired > 0) log.info({ expired }, 'cancelled jobs whose upload window lapsed');
      if (stopping) return;
      for (const jobId of await jobsToResume(options.orm.em.fork(), QUEUED_GRACE_SECONDS, capacity - running.size)) {
        if (stopping || !runJob(jobId)) break;
      }
    } catch (error) {
      // It runs again within SWEEP_MS: a lost connection heals by itself, anything else needs a look.
      if (isConnectionError(error)) log.warn({ err: error }, 'import sweep lost its database connection; it runs again');
      else log.error({ err: error }, 'import sweep failed');
    }
  };

  // The sweeper first: joining the group can wait out a dead member's session (30 s) after a crash.
  const timer = setInterval(() => void sweep(), SWEEP_MS);
  timer.unref();
  void sweep();
  // Group `<prefix>catalog.imports`: one per environment, so runs sharing a broker never rebalance each other.
  const joining = options.kafka.runConsumer({
    groupId: `${options.kafka.topicPrefix}catalog.imports`,
    topics: [TOPICS.imports],
    fromBeginning: true,
    eachMessage: async ({ message }: EachMessagePayload) => {
      let body: Partial<ImportMessage> | undefined;
      try {
        body = JSON.parse(message.value?.toString('utf8') ?? '') as Partial<ImportMessage>;
      } catch {
        // Logged below: retrying cannot fix a malformed record.
      }
      if (typeof body?.jobId !== 'string' || !isId(body.jobId)) {
        log.warn({ offset: message.offset }, 'skipped a record that is not an import job');
        return;
      }
      // The message only announces the job: a full process leaves it queued for a sweeper with room.
      const jobId = body.jobId;
      const started = await inSpan(`process ${TOPICS.imports}`, {
        kind: 'consumer', parent: headerText(message.headers?.traceparent) ?? null, attributes: { 'messaging.system': 'kafka', 'catalog.import.id': jobId },
      }, async (span) => !stopping && runJob(jobId, traceparent(span)) !== undefined);
      log.debug({ jobId, started }, 'import message handled');
    },
  });
  // A start that failed (Kafka away) leaves nothing running: jobs the sweeper began stop at their
  // batch boundary, and the next attempt takes them up again.
  const consumer = await joining.catch(async (error: unknown) => {
    stopping = true;
    clearInterval(timer);
    await Promise.allSettled([...running.values()]);
    throw error;
  });
  return {
    async stop() {
      stopping = true;
      clearInterval(timer);
      await consumer.stop();
      await Promise.allSettled([...running.values()]);
    },
  };
}
