// The composition root: opens every dependency once and starts the roles this process plays.
import { hostname } from 'node:os';
import { singleMachineSettings } from '../platform/config/config.ts';
import type { Config } from '../platform/config/config.ts';
import { secretsKeyWarnings } from '../platform/config/secrets-key.ts';
import { analyseOnceFilled } from '../platform/db/first-statistics.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { openReadReplica } from '../platform/db/read-replica.ts';
import { observeStatements } from '../platform/db/sql.ts';
import type { Services } from '../platform/http/types.ts';
import { createOutboxRelay } from '../consumers/relay/outbox-relay.ts';
import { startWebhookWorkers } from '../consumers/webhooks/index.ts';
import { startMediaConsumer } from '../consumers/media/index.ts';
import { startImportConsumer } from '../consumers/import/index.ts';
import { createKafkaClient } from '../platform/kafka/client.ts';
import { startWhenKafkaAnswers } from '../platform/kafka/patience.ts';
import { ensureKafka } from '../scripts/kafka.ts';
import type { KafkaClient } from '../platform/kafka/client.ts';
import { consumerLag } from '../platform/kafka/lag.ts';
import type { Logger } from '../platform/log/logger.ts';
import type { Orm } from '../platform/db/orm.ts';
import { createLogger } from '../platform/log/logger.ts';
import { holdConsumerHeap, releaseStartupMemory } from '../platform/memory.ts';
import { keyCounter } from '../domain/access/key-store.ts';
import { outboxBacklog } from '../domain/events/outbox.ts';
import { pendingByWebhook } from '../domain/webhooks/pacing.ts';
import { createMetrics } from '../platform/metrics.ts';
import { cachedReadiness } from '../platform/http/ops.ts';
import { startOpsServer } from '../platform/http/ops-server.ts';
import { createStorage } from '../platform/storage/create-storage.ts';
import { startTracing } from '../platform/tracing.ts';
import { runningWork } from '../platform/running-work.ts';
import { secretBoxOf } from './secrets.ts';

export interface RunningService {
  orm: Orm;
  /** What the API's handlers are given; only in a process that plays the api role. */
  services: Services | undefined;
  /** Base address of the HTTP listener, when this process plays the api role. */
  url: string | undefined;
  /** Base address of the operations listener (/metrics, /healthz, /readyz), every role. */
  opsUrl: string;
  kafka: KafkaClient;
  close(): Promise<void>;
}

// The items table's first statistics (platform/db/first-statistics.ts): looked for every 2 s,
// gathered from 1,000 items, a few milliseconds of ANALYZE.
export const FIRST_STATISTICS = { tables: ['items'], rows: 1000, intervalMs: 2000 };

/** One pool per process, MikroORM's, the sum of what the roles it plays need (docs/operations.md, "Connection budget"). */
function poolSize(config: Config): number {
  const { apiConnections, consumerConnections } = config.capacity;
  return (config.role === 'consumers' ? 0 : apiConnections) + (config.role === 'api' ? 0 : consumerConnections);
}

export async function startService(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<RunningService> {
  const closers: Array<() => Promise<void>> = [];
  const close = async () => {
    // Reverse order of opening: stop taking work, then release what the work used.
    for (const closer of closers.reverse()) {
      await closer().catch((error) => logger.error({ err: error }, 'error while shutting down'));
    }
  };
  // A process of one role is usually one of a fleet: say what another machine would need.
  const needs = singleMachineSettings(config);
  if (config.role !== 'all' && needs.length > 0) {
    logger.warn({ needs }, `configured for one machine: processes on a second machine need ${needs.join(' and ')}`);
  }
  // Said at every start: a key for development only must not go unnoticed into a deployment.
  for (const warning of secretsKeyWarnings(config.secretsKey)) logger.warn(warning);
  const secrets = secretBoxOf(config);
  // The api role keeps V8's defaults.
  if (config.role !== 'api') holdConsumerHeap(logger);
  try {
    // First opened, last closed: the spans of the shutdown itself are flushed too.
    closers.push(await startTracing(process.env, config.role));
    // The contract, the handlers and the router only where requests are served: a consumers
    // process does without their memory.
    const api = config.role === 'consumers' ? undefined : await (await import('./api.ts')).loadApi();
    const orm = await openDatabase({ databaseUrl: config.databaseUrl, logger, poolSize: poolSize(config), secrets });
    closers.push(() => orm.close());
    const statistics = analyseOnceFilled(orm, logger, FIRST_STATISTICS);
    closers.push(() => statistics.stop());
    // Only where requests are served: the contract's lag-tolerant reads go there while it is well
    // (docs/operations.md, "Reads from a replica"). Readiness stays the primary's alone.
    const read = config.databaseRead;
    const readReplica = api && read ? await openReadReplica({
      databaseUrl: read.url, maxLagMs: read.maxLagMs, checkIntervalMs: read.checkIntervalMs, poolSize: config.capacity.apiReadConnections, logger,
    }) : undefined;
    if (readReplica) closers.push(() => readReplica.close());
    // No KAFKA_BROKERS means "run the local broker" (docs/configuration.md, `KAFKA_BROKERS`): start it, or reuse one that answers.
    const brokers = config.kafkaBrokers ?? (await ensureKafka({ dataDir: config.dataDir, logger })).brokers;
    // Per process, so that Kafka's tools (consumer group members, quotas, broker logs) tell the fleet's processes apart.
    const kafka = await createKafkaClient(config, logger, { clientId: `catalog-${config.role}-${hostname()}-${process.pid}`, brokers });
    closers.push(() => kafka.disconnect());
    // Serving needs only Postgres: the outbox keeps events while Kafka is away, and what needs
    // Kafka starts once it answers (docs/operations.md, "When a dependency or a process goes away").
    const topics = startWhenKafkaAnswers('topic setup', () => kafka.ensureTopics(), logger);
    closers.push(async () => topics.stop());
    const storage = createStorage(config);
    // One registry per process: the API serves it, the consumers count into it.
    const kafkaReachable = () => kafka.ping(2000);
    const readiness = cachedReadiness({ orm, kafkaReachable });
    const metrics = createMetrics({
      outboxBacklog: () => outboxBacklog(orm.em.fork()), dependencies: readiness,
      ...(readReplica ? { readReplicaLag: () => readReplica.lagSeconds() } : {}),
      ...(config.role === 'api' ? {} : {
        consumerLag: () => consumerLag(kafka),
        // Where deliveries are made, not on every API replica: one statement per scrape interval.
        webhookBacklogs: () => pendingByWebhook(orm.em.fork()).catch((error: unknown) => {
          logger.warn({ err: error }, 'could not read the webhook backlogs for /metrics: the last reading stays');
          throw error;
        }),
      }),
    });
    // Each statement's time by name in /metrics and, at LOG_LEVEL=debug, in the log.
    const logStatements = logger.isLevelEnabled('debug');
    const observe = (statement: string, seconds: number) => {
      metrics.statementDuration.observe({ statement }, seconds);
      if (logStatements) logger.debug({ statement, ms: Math.round(seconds * 1e6) / 1e3 }, 'statement');
    };
    observeStatements(orm, observe);
    if (readReplica) observeStatements(readReplica.orm, observe);
    // Before the consumers start: their group joins can take a while, and liveness must answer meanwhile.
    const ops = await startOpsServer({ metrics, readiness, logger }, config.opsPort, config.opsHost);
    closers.push(ops.close);
    logger.info({ url: ops.url, role: config.role }, 'operations port listening');
    const services: Services | undefined = api && {
      config, logger, orm, readReplica, storage, secrets, countKey: keyCounter(orm.em), contract: api.contract, metrics, kafkaReachable, readiness,
    };
    if (config.role !== 'api') {
      // The relay runs with the consumers: an api-only fleet leaves events safely in the outbox.
      const relay = createOutboxRelay({
        orm, databaseUrl: config.databaseUrl, kafka, logger, eventRetentionMs: config.eventRetentionDays * 24 * 3600_000,
        itemVersionRetentionMs: config.itemVersionRetentionDays * 24 * 3600_000, auditLogRetentionMs: config.auditLogRetentionDays * 24 * 3600_000,
      });
      await relay.start();
      closers.push(() => relay.stop());
      // Side by side: each waits for its consumer group's join, which after a crash can take a
      // dead member's session timeout; the import sweeper resumes jobs meanwhile.
      const whenTopics = <T>(start: () => Promise<T>) => async () => {
        await kafka.ensureTopics();
        return start();
      };
      const imports = runningWork();
      const workers = [
        startWhenKafkaAnswers('the import consumer', whenTopics(() => startImportConsumer({ config, kafka, orm, storage, secrets, metrics, logger, imports })), logger),
        startWhenKafkaAnswers('the webhook workers', whenTopics(() => startWebhookWorkers({ config, kafka, orm, secrets, metrics, logger })), logger),
        startWhenKafkaAnswers('the media consumer', whenTopics(() => startMediaConsumer({ config, kafka, orm, storage, metrics, logger, imports })), logger),
      ];
      // Stopped side by side: each consumer's stop waits out its fetch in flight (kafkajs' 5 s
      // long poll), which one after the other would add up.
      closers.push(async () => {
        for (const worker of workers) worker.stop();
        const started = (await Promise.all(workers.map((worker) => worker.started))).flatMap((worker) => (worker ? [worker] : []));
        for (const result of await Promise.allSettled(started.map((worker) => worker.stop()))) {
          if (result.status === 'rejected') logger.error({ err: result.reason }, 'error while stopping a consumer');
        }
      });
      await Promise.all(workers.map((worker) => worker.firstAttempt));
    }
    let url: string | undefined;
    if (api && services) {
      const served = await api.serve(services, config.port, config.host);
      closers.push(served.close);
      url = served.url;
      logger.info({ url, role: config.role }, 'catalog service listening');
    } else {
      logger.info({ role: config.role }, 'catalog consumers running');
    }
    await releaseStartupMemory();
    return { orm, services, url, opsUrl: ops.url, kafka, close };
  } catch (error) {
    await close();
    throw error;
  }
}
