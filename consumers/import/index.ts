// The import consumer: jobs from catalog.imports.v1, plus a sweeper for lapsed upload windows and orphaned jobs.
import type { EachMessagePayload } from 'kafkajs';
import { recordProcessingFailure } from '../../domain/imports/parking.ts';
import { processImport } from '../../domain/imports/process.ts';
import type { ImportMessage } from '../../domain/imports/job-store.ts';
import { expireUploadWindows, jobsToResume } from '../../domain/imports/sweep.ts';
import { detached } from '../../platform/async-context.ts';
import type { Config } from '../../platform/config/config.ts';
import { isConnectionError } from '../../platform/db/connections.ts';
import { isId } from '../../platform/ids.ts';
import type { Orm } from '../../platform/db/orm.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import type { Logger } from '../../platform/log/logger.ts';
import type { Metrics } from '../../platform/metrics.ts';
import type { BatchCounts } from '../../domain/imports/job-store.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';

// Often enough that a crashed consumer's job resumes within seconds of another one running.
export const SWEEP_MS = 3000;
// A queued job's message normally arrives within a second; past this the sweeper takes it itself.
export const QUEUED_GRACE_SECONDS = 30;
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
  /** The process's metrics: each committed batch's lines are counted. */
  readonly metrics?: Metrics;
  readonly logger: Logger;
}

// The group coordinator's answers to a heartbeat once this member no longer owns its partitions:
// a member joined or left (a rebalance), or this one was dropped from the group.
const HANDED_OVER = new Set(['REBALANCE_IN_PROGRESS', 'UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION']);

/** Whether a run stopped because its partition went to another member (the heartbeat between batches said so). */
function handedOver(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string' && HANDED_OVER.has(type)) return true;
  }
  return false;
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
  let stopping = false;

  /**
   * What a failed run leaves behind. It never throws: the sweeper takes an unfinished job up again
   * within SWEEP_MS, so a failure neither restarts the Kafka consumer (which would hold up every
   * other catalog's jobs) nor is lost. A lost connection only delays the job, and a partition
   * handed to another member (scaling out or in) hands the job over at its batch boundary; any
   * other failure counts towards parking it (recordProcessingFailure).
   */
  const afterFailure = async (jobId: string, error: unknown): Promise<string> => {
    if (handedOver(error)) {
      log.info({ jobId }, 'import handed over after its last batch: its partition went to another consumer');
      return 'handed over';
    }
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

  /** One run per job in this process; the processing lock keeps other processes off it. */
  const runJob = (jobId: string, heartbeat?: () => Promise<void>): Promise<unknown> => {
    const current = running.get(jobId);
    if (current) return current;
    // A job outlives the message or sweep that started it, and later callers share it.
    const run = detached(() => processImport({
      orm: options.orm, storage, databaseUrl: options.config.databaseUrl, logger: log, mediaRefreshAgeHours: options.config.media.refreshAgeHours,
      source: { allowPrivate: options.config.outboundAllowPrivate, timeoutMs: SOURCE_TIMEOUT_MS },
      ...(heartbeat ? { heartbeat } : {}), stopping: () => stopping,
      ...(options.metrics ? { onCommitted: countLines(options.metrics) } : {}),
    }, jobId))
      .catch((error: unknown) => afterFailure(jobId, error))
      .finally(() => running.delete(jobId));
    running.set(jobId, run);
    return run;
  };

  const sweep = async () => {
    try {
      const expired = await expireUploadWindows(options.orm.em.fork());
      if (expired > 0) log.info({ expired }, 'cancelled jobs whose upload window lapsed');
      for (const jobId of await jobsToResume(options.orm.em.fork(), QUEUED_GRACE_SECONDS)) {
        if (stopping) break;
        if (!running.has(jobId)) void runJob(jobId);
      }
    } catch (error) {
      log.error({ err: error }, 'import sweep failed');
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
    // Up to three jobs at a time per process, one per partition.
    partitionsConsumedConcurrently: 3,
    eachMessage: async ({ message, heartbeat }: EachMessagePayload) => {
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
      const outcome = await runJob(body.jobId, heartbeat);
      log.debug({ jobId: body.jobId, outcome }, 'import message handled');
    },
  });
  const consumer = await joining.catch((error: unknown) => {
    clearInterval(timer);
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
