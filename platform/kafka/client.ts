// The one edge around kafkajs: builds the client from config, routes its logs to pino, and hands out producers, consumers and a ping.
import { Kafka, logLevel } from 'kafkajs';
import type { Admin, Consumer, EachBatchHandler, EachMessageHandler, LogEntry, Message, Producer, RecordMetadata, RetryOptions } from 'kafkajs';
import type { Config } from '../config/config.ts';
import { isConnectionError } from '../db/connections.ts';
import type { Logger } from '../log/logger.ts';
import { silenceKafkajsTimerWarning } from './kafkajs-quirks.ts';
import { KafkaDefaultPartitioner } from './partitioner.ts';
import { clusterTakesWrites } from './probe.ts';
import { allTopicNames, ensureTopics, topicName, topicPlan } from './topics.ts';
import type { TopicsReport } from './topics.ts';

export interface KafkaClient {
  readonly kafka: Kafka;
  readonly brokers: readonly string[];
  readonly topicPrefix: string;
  /** Full topic name of a logical one (`catalog.events.v1` → `<prefix>catalog.events.v1`). */
  topic(logical: string): string;
  /** The shared producer, connected on first use. */
  producer(): Promise<Producer>;
  /**
   * Every service topic's partition count, by full name, from the cluster's metadata: read on
   * first use and again when a minute old, or after a failed read.
   */
  partitionCounts(): Promise<ReadonlyMap<string, number>>;
  /** Sends to a logical topic with acks from every in-sync replica; resolves once Kafka acked. */
  send(logicalTopic: string, messages: Message[]): Promise<RecordMetadata[]>;
  /** A short-lived admin: connects, runs `use`, always disconnects. */
  withAdmin<T>(use: (admin: Admin) => Promise<T>): Promise<T>;
  /**
   * Creates the service's topics under the prefix when missing and reconciles the configuration
   * of those that exist, once per client (later calls return the first report).
   */
  ensureTopics(): Promise<TopicsReport>;
  /** Subscribes a consumer in a group and starts it; stop() finishes the in-flight batch and commits. */
  runConsumer(options: RunConsumerOptions): Promise<RunningConsumer>;
  /**
   * True when any of the brokers answers within the timeout and the cluster can take the
   * service's writes: every partition of its topics led, with min.insync.replicas in sync (/readyz).
   */
  ping(timeoutMs?: number): Promise<boolean>;
  /** The consumers this client runs now (their groups' lag is a metric: platform/kafka/lag.ts). */
  running(): readonly RunningConsumer[];
  /** Disconnects the producer and every consumer this client started. */
  disconnect(): Promise<void>;
}

export interface RunConsumerOptions {
  readonly groupId: string;
  /** Logical topic names; the prefix is added here. */
  readonly topics: readonly string[];
  readonly fromBeginning?: boolean;
  readonly eachMessage?: EachMessageHandler;
  readonly eachBatch?: EachBatchHandler;
  readonly partitionsConsumedConcurrently?: number;
}

export interface RunningConsumer {
  readonly consumer: Consumer;
  readonly groupId: string;
  /** Full topic names, prefix included. */
  readonly topics: readonly string[];
  stop(): Promise<void>;
}

export interface KafkaClientOptions {
  /** Names the process in broker logs and group member ids, e.g. `catalog-api`. */
  readonly clientId?: string;
  /** Overrides config.kafkaBrokers: the local broker the composition root started, or a test's own. */
  readonly brokers?: readonly string[];
  /** Overrides config.kafkaTopicPrefix (a prefix per test run). */
  readonly topicPrefix?: string;
  /** Connection retries (kafkajs default: 5, about 10 s); outage tests lower it to fail fast. */
  readonly retry?: RetryOptions;
}

const PINO_LEVEL: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

function kafkajsLevel(pinoLevel: string): logLevel {
  switch (pinoLevel) {
    case 'trace': case 'debug': return logLevel.DEBUG;
    case 'info': return logLevel.INFO;
    case 'warn': return logLevel.WARN;
    case 'silent': return logLevel.NOTHING;
    default: return logLevel.ERROR;
  }
}

// What kafkajs says at error level about faults it recovers from by itself: a member that a
// rebalance left behind joins again; a consumer that lost its broker crashes and is restarted.
const RECOVERING = [
  /re-joining the group/,
  /^Restarting the consumer in/,
  /^Crash: \w+: (Connection error|Connection timeout|Closed connection|No broker available|.*ECONNREFUSED|.*ECONNRESET|.*coordinator is (loading|not available)|.*not the correct coordinator|.*no leader|.*Connection terminated unexpectedly)/,
];

// The broker's refusals of a record itself (the relay's REFUSED_FOR_GOOD, consumers/relay/records.ts),
// in kafkajs' words: kafkajs logs each before it throws; the relay parks the record and logs it
// once, naming it, so the operator reads one error line per record.
const REFUSED_RECORD = [
  /The request included a message larger than the max message size/,
  /The request included message batch larger than the configured segment size/,
  /This record has failed the validation on broker/,
  /This message has failed its CRC checksum/,
  /The timestamp of the message is out of acceptable range/,
];

/** kafkajs log entries → pino, one child logger per kafkajs namespace. */
export function kafkajsLogCreator(logger: Logger) {
  const base = logger.child({ component: 'kafkajs' });
  return () => ({ namespace, level, log }: LogEntry) => {
    const { message, timestamp: _timestamp, error, stack: _stack, ...rest } = log;
    // An Error as `err`, so pino writes its type, message, stack and cause (not `[object Object]`).
    const fields = error instanceof Error ? { ...rest, err: error } : error === undefined ? rest : { ...rest, error };
    let target = PINO_LEVEL[level] ?? 'info';
    // Connection-level trouble (broker gone, coordinator loading) is logged by kafkajs at every
    // retry, dozens a minute in an outage; the operation that finally fails throws to its caller,
    // who logs it once with context.
    if (namespace === 'Connection' || namespace === 'BrokerPool') target = 'debug';
    else if (namespace === 'Producer' && REFUSED_RECORD.some((pattern) => pattern.test(message))) target = 'debug';
    // Each retry of a send (a broker away, a leader moving, too few replicas in sync): the relay
    // logs the send that finally fails, once an episode, and its recovery.
    else if (namespace === 'Producer' && message.startsWith('Failed to send messages')) target = 'debug';
    else if (target === 'error' && RECOVERING.some((pattern) => pattern.test(message))) target = 'warn';
    // A handler that failed because Postgres went away is run again by kafkajs: recovered, not an error.
    else if (target === 'error' && isConnectionError(error)) target = 'warn';
    base[target]({ namespace, ...fields }, message);
  };
}

const PARTITION_COUNTS_MS = 60_000;

export async function createKafkaClient(config: Config, logger: Logger, options: KafkaClientOptions = {}): Promise<KafkaClient> {
  silenceKafkajsTimerWarning();
  const brokers = [...(options.brokers ?? config.kafkaBrokers ?? [])];
  if (brokers.length === 0) throw new Error('no Kafka brokers: set KAFKA_BROKERS, or pass the local broker\'s addresses');
  const topicPrefix = options.topicPrefix ?? config.kafkaTopicPrefix;
  const log = logger.child({ component: 'kafka' });
  const kafka = new Kafka({
    clientId: options.clientId ?? 'catalog',
    brokers,
    connectionTimeout: 3000,
    requestTimeout: 30_000,
    logLevel: kafkajsLevel(config.logLevel),
    logCreator: kafkajsLogCreator(logger),
    ...(options.retry ? { retry: options.retry } : {}),
  });

  let producerPromise: Promise<Producer> | undefined;
  const consumers = new Set<RunningConsumer>();

  const producer = (): Promise<Producer> => {
    producerPromise ??= (async () => {
      const created = kafka.producer({
        // Not kafkajs' idempotent mode: it retries forever by default (a send would hang through a
        // broker outage while the relay holds its transaction), and when a failed batch is re-sent
        // with other contents its sequence numbers no longer line up (OUT_OF_ORDER_SEQUENCE_NUMBER).
        // At-least-once comes from the outbox re-sending. The relay's lanes send side by side; a lane
        // (and so every key) has one send in flight at a time, which keeps per-key order.
        idempotent: false,
        maxInFlightRequests: 32,
        allowAutoTopicCreation: false,
        // Murmur2 like the Java client, so other consumers/producers agree on key → partition.
        createPartitioner: KafkaDefaultPartitioner,
        // Bounded: a send fails in ~10 s when the broker is gone and the caller backs off.
        retry: { retries: 5, initialRetryTime: 300, maxRetryTime: 3000 },
      });
      await created.connect();
      return created;
    })().catch((error: unknown) => {
      producerPromise = undefined;
      throw error;
    });
    return producerPromise;
  };

  const withAdmin = async <T>(use: (admin: Admin) => Promise<T>): Promise<T> => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      return await use(admin);
    } finally {
      await admin.disconnect();
    }
  };

  let topicsReport: Promise<TopicsReport> | undefined;
  const ensureServiceTopics = (): Promise<TopicsReport> => {
    topicsReport ??= withAdmin((admin) => ensureTopics(admin, topicPlan(topicPrefix, config))).then((report) => {
      if (report.created.length > 0) log.info({ topics: report.created, partitions: config.kafkaTopics.partitions }, 'topics created');
      for (const { topic, entries } of report.reconciled) log.info({ topic, entries }, 'topic configuration reconciled');
      for (const { topic, partitions } of report.fewerPartitions) {
        // Raising it would move keys to other partitions and break their order (docs/design.md, "Kafka topics").
        log.warn({ topic, partitions, configured: config.kafkaTopics.partitions },
          'topic has fewer partitions than KAFKA_PARTITIONS; left as it is: grow it only as README "Operations → Kafka topics" says');
      }
      return report;
    }, (error: unknown) => {
      topicsReport = undefined;
      throw error;
    });
    return topicsReport;
  };

  // A partition count changes only when an operator grows a topic (docs/operations.md, "Kafka topics").
  let partitionCounts: { at: number; counts: Promise<ReadonlyMap<string, number>> } | undefined;
  const readPartitionCounts = (): Promise<ReadonlyMap<string, number>> => {
    if (partitionCounts && Date.now() - partitionCounts.at < PARTITION_COUNTS_MS) return partitionCounts.counts;
    const counts = withAdmin((admin) => admin.fetchTopicMetadata({ topics: allTopicNames(topicPrefix) }))
      .then(({ topics }) => new Map(topics.map((topic) => [topic.name, topic.partitions.length])));
    const entry = { at: Date.now(), counts };
    partitionCounts = entry;
    counts.catch(() => { if (partitionCounts === entry) partitionCounts = undefined; });
    return counts;
  };

  const runConsumer = async (run: RunConsumerOptions): Promise<RunningConsumer> => {
    let stopping: Promise<void> | undefined;
    // A killed member holds its partitions until its session times out: 10 s rather than kafkajs'
    // 30 s lets a restarted consumer take its work back sooner (the broker allows 6 s and up).
    const consumer = kafka.consumer({
      groupId: run.groupId, allowAutoTopicCreation: false, sessionTimeout: 10_000, heartbeatInterval: 3000,
      // kafkajs restarts a crashed consumer on a timer that its disconnect() clears, but a crash
      // that lands while disconnect() runs schedules a restart after that, and the stopped
      // consumer then reconnects every 300 ms for ever, holding its process open.
      // Retries: kafkajs' consumer default.
      retry: { retries: 5, restartOnFailure: async () => stopping === undefined },
    });
    await consumer.connect();
    await consumer.subscribe({ topics: run.topics.map((t) => topicName(topicPrefix, t)), fromBeginning: run.fromBeginning ?? false });
    // autoCommit (the default) commits resolved offsets after every batch, including the one a
    // stop() interrupts, so a graceful stop re-delivers nothing that was handled.
    await consumer.run({
      ...(run.eachMessage ? { eachMessage: run.eachMessage } : {}),
      ...(run.eachBatch ? { eachBatch: run.eachBatch } : {}),
      partitionsConsumedConcurrently: run.partitionsConsumedConcurrently ?? 1,
    });
    const running: RunningConsumer = {
      consumer,
      groupId: run.groupId,
      topics: run.topics.map((t) => topicName(topicPrefix, t)),
      stop: () => {
        stopping ??= (async () => {
          consumers.delete(running);
          await consumer.disconnect();
          log.info({ groupId: run.groupId }, 'consumer stopped');
        })();
        return stopping;
      },
    };
    consumers.add(running);
    return running;
  };

  return {
    kafka,
    brokers,
    topicPrefix,
    topic: (logical) => topicName(topicPrefix, logical),
    producer,
    async send(logicalTopic, messages) {
      return (await producer()).send({ topic: topicName(topicPrefix, logicalTopic), messages, acks: -1 });
    },
    withAdmin,
    ensureTopics: ensureServiceTopics,
    partitionCounts: readPartitionCounts,
    runConsumer,
    ping: (timeoutMs = 2000) => clusterTakesWrites(brokers, allTopicNames(topicPrefix), timeoutMs),
    running: () => [...consumers],
    async disconnect() {
      await Promise.allSettled([...consumers].map((c) => c.stop()));
      const current = producerPromise;
      producerPromise = undefined;
      if (current) await (await current.catch(() => undefined))?.disconnect();
    },
  };
}
