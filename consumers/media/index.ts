// The media consumer: jobs from catalog.media.v1 are downloaded and ingested politely (bounded in all and per host), with renditions.
import { headerText, inSpan, startSpan, traceparent } from '../../platform/tracing.ts';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { KafkaMessage } from 'kafkajs';
import { renditionsOfContent } from '../../domain/media/asset-store.ts';
import { createAssetRecorder } from '../../domain/media/assets.ts';
import { createMediaStore } from '../../domain/media/media-store.ts';
import { createRenditionMaker } from '../../domain/media/renditions.ts';
import type { IngestDeps, IngestOutcome } from '../../domain/media/ingest.ts';
import type { MediaJob } from '../../domain/media/register.ts';
import type { Config } from '../../platform/config/config.ts';
import type { Orm } from '../../platform/db/orm.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import type { Metrics } from '../../platform/metrics.ts';
import type { Logger } from '../../platform/log/logger.ts';
import { createHostGate } from '../../platform/outbound/host-gate.ts';
import { createImageFetcher } from '../../platform/outbound/image-fetcher.ts';
import type { RunningWork } from '../../platform/running-work.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import { LEASE_RENEW_MS, createJobQueue } from './job-queue.ts';

/** Downloads are capped at 20 MB (docs/media.md, "Lifecycle"). */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
// A batch waits while the queue is full: the group membership must stay alive meanwhile.
const HEARTBEAT_MS = 3000;
const HASH = /^[0-9a-f]{64}$/;

export interface MediaConsumerOptions {
  readonly config: Config;
  readonly kafka: KafkaClient;
  readonly orm: Orm;
  /** Where the images go, content-addressed. */
  readonly storage: ObjectStorage;
  /** The process's metrics: each finished job is counted by outcome. */
  readonly metrics?: Metrics;
  readonly logger: Logger;
  /**
   * The import jobs running in this process: while any runs, images in flight drop to
   * MEDIA_CONCURRENCY_WHILE_IMPORTING; when one ends, the images held for it are queued.
   */
  readonly imports?: RunningWork;
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
      // A consumer span for a traced message; the job's work continues it.
      const span = startSpan(`process ${TOPICS.media}`, {
        kind: 'consumer', parent: headerText(message.headers?.traceparent) ?? null, childOnly: true, attributes: { 'messaging.system': 'kafka' },
      });
      span?.end();
      const traced = span ? { traceparent: traceparent(span)! } : {};
      return { ...job, refresh: job.refresh === true, externalIds: Array.isArray(job.externalIds) ? job.externalIds : [], ...traced } as MediaJob;
    }
  } catch {
    // Logged below: a malformed record is skipped for good, retrying cannot fix it.
  }
  logger.warn({ offset: message.offset, key: message.key?.toString() }, 'skipped a record that is not a media job');
  return undefined;
}

// No download takes this long (MEDIA_TIMEOUT_MS is at most 10 minutes an attempt): an older file
// in the download folder was left by a process that died.
const STALE_DOWNLOAD_MS = 6 * 3600_000;

/**
 * Where downloads are written as they arrive: beside the stored images for the local driver (a
 * rename puts them in place), in the data folder for s3. Files a dead process left are removed.
 */
async function prepareDownloadDir(config: Config, log: Logger): Promise<string> {
  const dir = config.storageDriver === 'local' ? join(config.storageDir, '.incoming') : join(config.dataDir, 'media-incoming');
  await mkdir(dir, { recursive: true });
  for (const name of await readdir(dir)) {
    const file = join(dir, name);
    const info = await stat(file).catch(() => undefined);
    if (info && Date.now() - info.mtimeMs > STALE_DOWNLOAD_MS) await rm(file, { force: true });
  }
  log.debug({ dir }, 'media downloads go to this folder');
  return dir;
}

/**
 * Group `<prefix>catalog.media.ingest`. Jobs run concurrently through the host gate (jobs of one
 * asset in order); a job that fails for a reason a retry can fix (database, storage) keeps its
 * lease until it lapses, and is then queued again: finished jobs are skipped when redelivered.
 */
export async function startMediaConsumer({ config, kafka, orm, storage, metrics, logger, imports }: MediaConsumerOptions): Promise<MediaConsumer> {
  const log = logger.child({ component: 'media-consumer' });
  const db = orm.em.fork();
  // Downloads and renditions take the CPU an import's batches need: they yield while one runs (docs/media.md, "Lifecycle").
  const totalFor = (importing: number) => (importing > 0 ? Math.min(config.media.concurrencyWhileImporting, config.media.concurrency) : config.media.concurrency);
  const gate = createHostGate({ total: totalFor(imports?.count ?? 0), perHost: config.media.hostConcurrency });
  imports?.onChange((importing) => gate.setTotal(totalFor(importing)));
  const downloadDir = await prepareDownloadDir(config, log);
  const fetcher = createImageFetcher({
    timeoutMs: config.media.timeoutMs,
    retries: config.media.retries,
    maxBytes: MAX_IMAGE_BYTES,
    allowPrivate: config.outboundAllowPrivate,
    allowedHosts: config.media.allowedHosts,
    concurrencyPerHost: config.media.hostConcurrency,
    downloadDir,
    onRetryAfter: (host, ms) => {
      log.info({ host, retryAfterMs: ms }, 'an image host asked to wait; its downloads pause');
      gate.pause(host, ms);
    },
  });
  const store = createMediaStore(storage, config.storageDir);
  const renditions = createRenditionMaker({ specs: config.media.renditions, store, known: (sha) => renditionsOfContent(db, sha) });
  const deps: IngestDeps = {
    recorder: createAssetRecorder(db),
    // Each download (with its retries) and each image's renditions are spans of the job's.
    fetcher: { ...fetcher, fetch: (url, how) => inSpan('media fetch', { kind: 'client', childOnly: true, attributes: { 'http.request.method': how?.method ?? 'GET' } }, () => fetcher.fetch(url, how)) },
    store,
    throttle: (host, work) => gate.run(host, work),
    renditions: { ...renditions, forImage: (...args) => inSpan('media renditions', { childOnly: true }, () => renditions.forImage(...args)) },
    readStored: async (path) => Buffer.concat(await (await storage.read(path)).toArray()),
  };
  const counts: Record<IngestOutcome, number> = { ingested: 0, not_modified: 0, unchanged: 0, failed: 0, skipped: 0 };

  const queue = createJobQueue({ db, deps, counts, log, ...(metrics ? { onOutcome: (outcome: IngestOutcome) => metrics.mediaJobs.inc({ outcome }) } : {}) });
  const timer = setInterval(() => void queue.sweep(), LEASE_RENEW_MS);
  timer.unref();
  // The images held for an import of this process go as soon as it ends; other processes' imports
  // release theirs at the next sweep.
  let importing = imports?.count ?? 0;
  let stopped = false;
  imports?.onChange((count) => {
    if (count < importing && !stopped) void queue.sweep();
    importing = count;
  });

  const joining = kafka.runConsumer({
    groupId: `${kafka.topicPrefix}catalog.media.ingest`,
    topics: [TOPICS.media],
    fromBeginning: true,
    partitionsConsumedConcurrently: 3,
    // A batch returns once its jobs are leased and queued, not done: its offsets are committed
    // then, and a job that waits for a slow host holds up neither its partition nor the others.
    // A job lost with its process is queued again when its lease lapses (job-queue.ts).
    eachBatch: async ({ batch, heartbeat }) => {
      const jobs = batch.messages.map((message) => toJob(message, log)).filter((job): job is MediaJob => job !== undefined);
      const beat = setInterval(() => void heartbeat().catch(() => undefined), HEARTBEAT_MS);
      try {
        await queue.take(jobs);
      } finally {
        clearInterval(beat);
      }
    },
  });
  // A start that failed (Kafka away) leaves nothing running: the next attempt starts afresh.
  const running = await joining.catch(async (error: unknown) => {
    stopped = true;
    clearInterval(timer);
    await queue.stop();
    fetcher.close();
    throw error;
  });
  log.info({ concurrency: config.media.concurrency, perHost: config.media.hostConcurrency }, 'media consumer running');
  return {
    counts,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running.stop();
      await queue.stop();
      fetcher.close();
    },
  };
}
