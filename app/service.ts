// The composition root: opens every dependency once and starts the roles this process plays.
import { hostname } from 'node:os';
import type { Config } from '../platform/config/config.ts';
import { analyseOnceFilled } from '../platform/db/first-statistics.ts';
import { openDatabase } from '../platform/db/orm.ts';
import type { Services } from '../platform/http/types.ts';
import { createOutboxRelay } from '../consumers/relay/outbox-relay.ts';
import { startWebhookWorkers } from '../consumers/webhooks/index.ts';
import { startMediaConsumer } from '../consumers/media/index.ts';
import { startImportConsumer } from '../consumers/import/index.ts';
import { createKafkaClient } from '../platform/kafka/client.ts';
import { ensureKafka } from '../scripts/kafka.ts';
import type { KafkaClient } from '../platform/kafka/client.ts';
import type { Logger } from '../platform/log/logger.ts';
import type { Orm } from '../platform/db/orm.ts';
import { createLogger } from '../platform/log/logger.ts';
import { holdConsumerHeap, releaseStartupMemory } from '../platform/memory.ts';
import { keyCounter } from '../domain/access/key-store.ts';
import { outboxBacklog } from '../domain/events/outbox.ts';
import { createMetrics } from '../platform/metrics.ts';
import { createStorage } from '../platform/storage/create-storage.ts';

export interface RunningService {
  orm: Orm;
  /** What the API's handlers are given; only in a process that plays the api role. */
  services: Services | undefined;
  /** Base address of the HTTP listener, when this process plays the api role. */
  url: string | undefined;
  kafka: KafkaClient;
  close(): Promise<void>;
}

// One pool per process, MikroORM's, sized for the roles it plays. Serving requests: as many
// statements at once as the API sends. The consumers hold at most: the relay 1, the webhook
// dispatcher 2 (claims, settlements), the fan-out 3 (a partition each), disable notices 1, media
// about 4 (batch loads, the asset writer), imports about 2 a running job (its batch and the read
// ahead's lookup). LISTEN and session locks use connections of their own, outside the pool.
const API_CONNECTIONS = 20;
const CONSUMER_CONNECTIONS = 16;

// The items table's first statistics (platform/db/first-statistics.ts): looked for every 2 s,
// gathered from 1,000 items, a few milliseconds of ANALYZE.
export const FIRST_STATISTICS = { tables: ['items'], rows: 1000, intervalMs: 2000 };

function poolSize(role: Config['role']): number {
  return (role === 'consumers' ? 0 : API_CONNECTIONS) + (role === 'api' ? 0 : CONSUMER_CONNECTIONS);
}

export async function startService(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<RunningService> {
  const closers: Array<() => Promise<void>> = [];
  const close = async () => {
    // Reverse order of opening: stop taking work, then release what the work used.
    for (const closer of closers.reverse()) {
      await closer().catch((error) => logger.error({ err: error }, 'error while shutting down'));
    }
  };
  // The api role keeps V8's defaults.
  if (config.role !== 'api') holdConsumerHeap(logger);
  try {
    // The contract, the handlers and the router only where requests are served: a consumers
    // process does without their memory.
    const api = config.role === 'consumers' ? undefined : await (await import('./api.ts')).loadApi();
    const orm = await openDatabase({ databaseUrl: config.databaseUrl, logger, poolSize: poolSize(config.role) });
    closers.push(() => orm.close());
    const statistics = analyseOnceFilled(orm, logger, FIRST_STATISTICS);
    closers.push(() => statistics.stop());
    // No KAFKA_BROKERS means "run the local broker" (docs/configuration.md, `KAFKA_BROKERS`): start it, or reuse one that answers.
    const brokers = config.kafkaBrokers ?? (await ensureKafka({ dataDir: config.dataDir, logger })).brokers;
    // Per process, so that Kafka's tools (consumer group members, quotas, broker logs) tell the fleet's processes apart.
    const kafka = await createKafkaClient(config, logger, { clientId: `catalog-${config.role}-${hostname()}-${process.pid}`, brokers });
    closers.push(() => kafka.disconnect());
    await kafka.ensureTopics();
    const storage = createStorage(config);
    // One registry per process: the API serves it, the consumers count into it.
    const metrics = createMetrics({ outboxBacklog: () => outboxBacklog(orm.em.fork()) });
    const services: Services | undefined = api && {
      config, logger, orm, storage, countKey: keyCounter(orm.em), contract: api.contract, metrics, kafkaReachable: () => kafka.ping(2000),
    };
    if (config.role !== 'api') {
      // The relay runs with the consumers: an api-only fleet leaves events safely in the outbox.
      const relay = createOutboxRelay({
        orm, databaseUrl: config.databaseUrl, kafka, logger, eventRetentionMs: config.eventRetentionDays * 24 * 3600_000,
        itemVersionRetentionMs: config.itemVersionRetentionDays * 24 * 3600_000,
      });
      await relay.start();
      closers.push(() => relay.stop());
      // Side by side: each waits for its consumer group's join, which after a crash can take a
      // dead member's session timeout; the import sweeper resumes jobs meanwhile.
      const workers = await Promise.allSettled([
        startImportConsumer({ config, kafka, orm, storage, metrics, logger }),
        startWebhookWorkers({ config, kafka, orm, metrics, logger }),
        startMediaConsumer({ config, kafka, orm, storage, logger }),
      ]);
      const started = workers.flatMap((worker) => (worker.status === 'fulfilled' ? [worker.value] : []));
      // Stopped side by side: each consumer's stop waits out its fetch in flight (kafkajs' 5 s
      // long poll), which one after the other would add up.
      closers.push(async () => {
        for (const result of await Promise.allSettled(started.map((worker) => worker.stop()))) {
          if (result.status === 'rejected') logger.error({ err: result.reason }, 'error while stopping a consumer');
        }
      });
      const failed = workers.find((worker) => worker.status === 'rejected');
      if (failed) throw failed.reason;
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
    return { orm, services, url, kafka, close };
  } catch (error) {
    await close();
    throw error;
  }
}
