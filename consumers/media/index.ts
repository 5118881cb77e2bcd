// The media consumer: jobs from catalog.media.v1 are downloaded and ingested, a bounded number at a time across partitions.
import type { KafkaMessage } from 'kafkajs';
import { assetKey, createAssetRecorder, loadAssets } from '../../domain/media/assets.ts';
import { ingestMedia } from '../../domain/media/ingest.ts';
import { createMediaStore } from '../../domain/media/media-store.ts';
import type { IngestDeps, IngestOutcome } from '../../domain/media/ingest.ts';
import type { MediaJob } from '../../domain/media/register.ts';
import type { Config } from '../../platform/config/config.ts';
import type { Orm } from '../../platform/db/orm.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import type { Logger } from '../../platform/log/logger.ts';
import { createImageFetcher } from '../../platform/outbound/image-fetcher.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';

/** DESIGN §4: downloads are capped at 20 MB. */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
// kafkajs' default session timeout is 30 s; a batch of slow downloads must keep the membership alive.
const HEARTBEAT_MS = 3000;
const HASH = /^[0-9a-f]{64}$/;

export interface MediaConsumerOptions {
  readonly config: Config;
  readonly kafka: KafkaClient;
  readonly orm: Orm;
  /** Where the images go, content-addressed. */
  readonly storage: ObjectStorage;
  readonly logger: Logger;
}

export interface MediaConsumer {
  /** Outcomes so far, for logs, tests and the benchmark. */
  readonly counts: Readonly<Record<IngestOutcome, number>>;
  stop(): Promise<void>;
}

function toJob(message: KafkaMessage, logger: Logger): MediaJob | undefined {
  try {
    const job = JSON.parse(message.value?.toString('utf8') ?? '') as Partial<MediaJob>;
    if (typeof job.catalogId === 'string' && typeof job.sourceUrlHash === 'string' && HASH.test(job.sourceUrlHash)
      && typeof job.url === 'string' && typeof job.queuedAt === 'string') {
      return { ...job, refresh: job.refresh === true, externalIds: Array.isArray(job.externalIds) ? job.externalIds : [] } as MediaJob;
    }
  } catch {
    // Logged below: a malformed record is skipped for good, retrying cannot fix it.
  }
  logger.warn({ offset: message.offset, key: message.key?.toString() }, 'skipped a record that is not a media job');
  return undefined;
}

/** A counting semaphore: at most `limit` downloads in flight, shared by every partition's batch. */
function limiter(limit: number) {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else active += 1;
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active -= 1;
    }
  };
}

/**
 * Group `<prefix>catalog.media.ingest`. A batch is handled concurrently, except that jobs of one
 * asset (same key) run in order; its offsets are committed once all of it is done, and a failure a
 * retry can fix (database, storage) throws so kafkajs re-delivers it: finished jobs are then skipped.
 */
export async function startMediaConsumer({ config, kafka, orm, storage, logger }: MediaConsumerOptions): Promise<MediaConsumer> {
  const log = logger.child({ component: 'media-consumer' });
  const db = orm.em.fork();
  const fetcher = createImageFetcher({
    timeoutMs: config.media.timeoutMs,
    retries: config.media.retries,
    maxBytes: MAX_IMAGE_BYTES,
    allowPrivate: config.outboundAllowPrivate,
    allowedHosts: config.media.allowedHosts,
    concurrencyPerHost: config.media.concurrency,
  });
  const deps: IngestDeps = { recorder: createAssetRecorder(db), fetcher, store: createMediaStore(storage, config.storageDir), throttle: limiter(config.media.concurrency) };
  const counts: Record<IngestOutcome, number> = { ingested: 0, not_modified: 0, unchanged: 0, failed: 0, skipped: 0 };

  const running = await kafka.runConsumer({
    groupId: `${kafka.topicPrefix}catalog.media.ingest`,
    topics: [TOPICS.media],
    fromBeginning: true,
    partitionsConsumedConcurrently: 3,
    eachBatch: async ({ batch, heartbeat }) => {
      const byAsset = new Map<string, MediaJob[]>();
      for (const message of batch.messages) {
        const job = toJob(message, log);
        if (job) byAsset.set(assetKey(job), [...(byAsset.get(assetKey(job)) ?? []), job]);
      }
      const beat = setInterval(() => void heartbeat().catch(() => undefined), HEARTBEAT_MS);
      try {
        // One query for the batch; a second job of the same asset reads it again after the first.
        const assets = await loadAssets(db, [...byAsset.values()].map((jobs) => jobs[0]!));
        // Settled, not Promise.all: a redelivery must not overlap jobs of this batch still running.
        const results = await Promise.allSettled([...byAsset.values()].map(async (jobs) => {
          for (const [i, job] of jobs.entries()) {
            const asset = (i === 0 ? assets : await loadAssets(db, [job])).get(assetKey(job));
            const outcome = await ingestMedia(deps, job, asset);
            counts[outcome] += 1;
            log.debug({ sourceUrlHash: job.sourceUrlHash, outcome }, 'media job done');
          }
        }));
        const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) {
          log.error({ err: failed.reason, partition: batch.partition }, 'media batch failed; it will be delivered again');
          throw failed.reason;
        }
      } finally {
        clearInterval(beat);
      }
    },
  });
  log.info({ concurrency: config.media.concurrency }, 'media consumer running');
  return {
    counts,
    async stop() {
      await running.stop();
      fetcher.close();
    },
  };
}
