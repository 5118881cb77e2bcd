// Kafka for integration tests: the shared broker, a private broker or cluster a test may stop, a topic prefix per run, reading a topic to its end, and a topic's record size limit.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import kafkajs, { Kafka, logLevel } from 'kafkajs';
import type { IHeaders } from 'kafkajs';
import { portFree } from '../../scripts/free-port.ts';
import { ensureKafka, killKafkaNode, startKafkaCluster, startKafkaNode, stopKafka, stopKafkaCluster, stopKafkaNode, wipeKafkaNode } from '../../scripts/kafka.ts';
import type { KafkaClusterOptions, KafkaOptions } from '../../scripts/kafka.ts';
import { silenceKafkajsTimerWarning } from '../../platform/kafka/kafkajs-quirks.ts';
import { checkKafkaRecord, serviceTopic } from './asyncapi.ts';
import { eventually } from './media.ts';
import type { BrokerContainer } from './kafka-container.ts';
import { runId } from './test-run.ts';

// Not importable by name: Node's ESM view of kafkajs' CommonJS exports stops before them.
const { ConfigResourceTypes, ConfigSource } = kafkajs;

export interface TopicRecord {
  readonly partition: number;
  readonly offset: string;
  readonly key: string | null;
  readonly value: Buffer | null;
  readonly headers: Record<string, string>;
  /** The record's Kafka timestamp, in milliseconds since the epoch. */
  readonly timestamp: string;
}

/** Whether the tests take their brokers from @testcontainers/kafka (docs/development.md, Containers). */
export const fromTestcontainers = (): boolean => process.env.TEST_KAFKA === 'testcontainers';

/** The broker every test file shares: KAFKA_BROKERS (set by global setup) or the local one on 9092. */
export async function sharedBrokers(): Promise<string[]> {
  const given = process.env.KAFKA_BROKERS?.split(',').map((b) => b.trim()).filter(Boolean);
  if (given && given.length > 0) return given;
  return (await ensureKafka({ dataDir: resolve('.data') })).brokers;
}

/**
 * `count` free consecutive ports from an even one, below Linux's ephemeral range (32768 and up), so that no
 * outgoing connection takes one while a broker is stopped and its restart finds them free again.
 */
export async function freePorts(count: number): Promise<number> {
  const slots = Math.floor((12_000 - count) / 2);
  for (let tries = 0; tries < 200; tries++) {
    const port = 20_000 + 2 * Math.floor(Math.random() * slots);
    let free = true;
    for (let p = port; free && p < port + count; p++) free = await portFree(p);
    if (free) return port;
  }
  throw new Error(`no ${count} free consecutive ports between 20000 and 32000`);
}

/** Two free neighbouring ports (a broker's and its controller's), as freePorts. */
export const freePortPair = (): Promise<number> => freePorts(2);

/**
 * A broker of the test's own, for tests that stop and restart it: the shared broker other files
 * use in parallel is never disturbed. Its ports (chosen free at the first start) and its data
 * folder are this run's, so another run on the machine never meets it; `stop` keeps both for a
 * restart, `remove` stops it and deletes the folder.
 */
export interface PrivateBroker {
  /** Its address before it first starts (for a service started while Kafka is away). */
  reserve: () => Promise<string[]>;
  start: () => Promise<string[]>;
  stop: () => Promise<void>;
  remove: () => Promise<void>;
}

export function privateBroker(name: string): PrivateBroker {
  if (fromTestcontainers()) return privateBrokerContainer();
  let options: KafkaOptions | undefined;
  const dataDir = resolve('.data', `${name}-${runId()}`);
  return {
    async reserve() {
      const port = await freePortPair();
      options = { dataDir, port, controllerPort: port + 1 };
      return [`127.0.0.1:${port}`];
    },
    async start() {
      // A broker found already answering is not this one (another run picked the same ports
      // meanwhile): on the first start, pick others; on a restart or at a reserved address, say so.
      for (let tries = 0; ; tries++) {
        const first = options === undefined;
        if (first) {
          const port = await freePortPair();
          options = { dataDir, port, controllerPort: port + 1 };
        }
        const { brokers, started } = await ensureKafka(options!);
        if (started) return brokers;
        if (!first || tries >= 4) throw new Error(`another broker answers on ${brokers.join(',')}, not ${name}`);
        options = undefined;
      }
    },
    stop: async () => { if (options) await stopKafka(options); },
    async remove() {
      if (options) await stopKafka(options);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A KRaft cluster of the test's own (with 3 nodes or more, replication factor 3 and min.insync.replicas 2) for
 * tests that stop, kill or wipe nodes. Like privateBroker's, its 2N ports (chosen free at the start) and its
 * data folder are this run's; `remove` stops every node and deletes the folder.
 */
export interface PrivateCluster {
  /** Starts every node; resolves with their addresses once each answers and lists all of them. */
  start: () => Promise<string[]>;
  /** SIGKILL, as `kill -9`: no controlled shutdown. */
  kill: (nodeId: number) => Promise<void>;
  /** A controlled shutdown: its partitions are led elsewhere first. */
  stop: (nodeId: number) => Promise<void>;
  /** Starts a stopped, killed or wiped node on its data; resolves once it answers and lists itself. */
  restart: (nodeId: number) => Promise<void>;
  /** Kills the node, deletes its log folders and formats it again into the cluster: started, it copies its partitions back. */
  wipe: (nodeId: number) => Promise<void>;
  remove: () => Promise<void>;
  /** Every node's address, up or not (empty before the start). */
  brokers: () => string[];
  /** Partition → the node id leading it (-1: none), or the node ids in sync, as the nodes that are up tell it. */
  leaderOf: (topic: string) => Promise<Map<number, number>>;
  isrOf: (topic: string) => Promise<Map<number, number[]>>;
  /** Its data folder, `.data/<name>-<run id>`. */
  readonly dataDir: string;
}

export function privateCluster(name: string, nodes = 3): PrivateCluster {
  if (fromTestcontainers()) throw new Error(`privateCluster(${name}) is not supported with Testcontainers (TEST_KAFKA=testcontainers)`);
  const dataDir = resolve('.data', `${name}-${runId()}`);
  let options: KafkaClusterOptions | undefined;
  const down = new Set<number>();
  const brokers = () => options ? Array.from({ length: nodes }, (_, i) => `127.0.0.1:${options!.port! + 2 * i}`) : [];
  const started = (): KafkaClusterOptions => { if (options) return options; throw new Error(`the cluster ${name} was never started`); };
  // Asked of the nodes that are up only: a kafkajs client meets a dead address first as often as not.
  const partitions = async (topic: string) => {
    silenceKafkajsTimerWarning();
    const admin = new Kafka({ clientId: 'test-cluster-metadata', brokers: brokers().filter((_, i) => !down.has(i + 1)), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      return (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]?.partitions ?? [];
    } finally {
      await admin.disconnect();
    }
  };
  return {
    dataDir,
    brokers,
    async start() {
      // A cluster found already answering is not this one (another run picked the same ports
      // meanwhile): on the first start, pick others.
      for (let tries = 0; ; tries++) {
        const first = options === undefined;
        if (first) options = { dataDir, nodes, port: await freePorts(2 * nodes) };
        const handle = await startKafkaCluster(options!);
        down.clear();
        if (handle.started) return handle.brokers;
        if (!first || tries >= 4) throw new Error(`another cluster answers on ${handle.brokers.join(',')}, not ${name}`);
        options = undefined;
      }
    },
    kill: async (nodeId) => { down.add(nodeId); await killKafkaNode(started(), nodeId); },
    stop: async (nodeId) => { down.add(nodeId); await stopKafkaNode(started(), nodeId); },
    restart: async (nodeId) => { await startKafkaNode(started(), nodeId); down.delete(nodeId); },
    wipe: async (nodeId) => { down.add(nodeId); await wipeKafkaNode(started(), nodeId); },
    async remove() {
      if (options) await stopKafkaCluster(options);
      rmSync(dataDir, { recursive: true, force: true });
    },
    leaderOf: async (topic) => new Map((await partitions(topic)).map((p) => [p.partitionId, p.leader])),
    isrOf: async (topic) => new Map((await partitions(topic)).map((p) => [p.partitionId, [...p.isr].sort((a, b) => a - b)])),
  };
}

/** privateBroker from Testcontainers: a container of its own, its client port fixed so a restart keeps its address. */
function privateBrokerContainer(): PrivateBroker {
  let container: BrokerContainer | undefined;
  let stopped = false;
  let port: number | undefined;
  return {
    async reserve() {
      port = await freePortPair();
      return [`127.0.0.1:${port}`];
    },
    async start() {
      if (container && stopped) await container.restart();
      // Loaded only here: a run on the local broker never loads Testcontainers.
      const { startBrokerContainer } = await import('./kafka-container.ts');
      container ??= await startBrokerContainer(port ?? await freePortPair());
      stopped = false;
      return container.brokers;
    },
    async stop() {
      await container?.stop();
      stopped = true;
    },
    remove: async () => { await container?.remove(); },
  };
}

/** `test/integration/outbox-relay.test.ts` → `t.<run id>.outbox-relay.`: unique per run and per file. */
export function topicPrefixFor(file: string): string {
  const stem = basename(file).replace(/\.test\.ts$/, '').replace(/[^a-zA-Z0-9-]+/g, '-');
  return `t.${runId()}.${stem}.`;
}

function headerStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.map(String).join(',') : String(value);
  }
  return out;
}

/**
 * Every record of a topic from the beginning up to the end offsets seen at the call, in partition
 * and offset order. Uses a throwaway consumer group so it never moves anyone else's offsets. On the
 * service's own topics each record is checked against asyncapi.yaml (checkKafkaRecord) first,
 * unless `check` is false (a test that checks some records itself).
 */
export async function readTopic(brokers: string[], topic: string, timeoutMs = 30_000, check = true): Promise<TopicRecord[]> {
  silenceKafkajsTimerWarning();
  // Quiet: a fresh group on a fresh broker meets "coordinator loading" and kafkajs retries it itself.
  const kafka = new Kafka({ clientId: 'test-read-topic', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map<number, bigint>();
  try {
    for (const p of await admin.fetchTopicOffsets(topic)) {
      if (BigInt(p.high) > BigInt(p.low)) ends.set(p.partition, BigInt(p.high));
    }
  } finally {
    await admin.disconnect();
  }
  if (ends.size === 0) return [];
  const records: TopicRecord[] = [];
  const seen = new Set<string>();
  const consumer = kafka.consumer({ groupId: `test-read-${randomBytes(6).toString('hex')}`, allowAutoTopicCreation: false });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`readTopic(${topic}) timed out after ${timeoutMs} ms`)), timeoutMs);
      consumer.run({
        eachMessage: async ({ partition, message }) => {
          const end = ends.get(partition);
          if (end === undefined || BigInt(message.offset) >= end) return;
          // A rebalance while reading makes kafkajs fetch some records again: the same partition
          // and offset is the same record, not a duplicate on the topic.
          const position = `${partition}:${message.offset}`;
          if (seen.has(position)) return;
          seen.add(position);
          records.push({
            partition,
            offset: message.offset,
            key: message.key?.toString('utf8') ?? null,
            value: message.value,
            headers: headerStrings(message.headers),
            timestamp: message.timestamp,
          });
          if (BigInt(message.offset) + 1n >= end) ends.delete(partition);
          if (ends.size === 0) {
            clearTimeout(timer);
            done();
          }
        },
      }).catch(fail);
    });
  } finally {
    await consumer.disconnect();
  }
  records.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
  if (check && serviceTopic(topic)) {
    for (const record of records) checkKafkaRecord(topic, record);
  }
  return records;
}

/**
 * Sets the topics' max.message.bytes, or with `undefined` deletes the override (the broker's
 * default applies again). AlterConfigs, the only kind kafkajs sends, replaces every override of
 * a topic, so the others (retention, compaction) are sent along.
 */
export async function setMaxMessageBytes(brokers: string[], topics: string[], bytes: number | undefined): Promise<void> {
  silenceKafkajsTimerWarning();
  const admin = new Kafka({ clientId: 'test-topic-limit', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const described = await admin.describeConfigs({ includeSynonyms: false, resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })) });
    await admin.alterConfigs({ validateOnly: false, resources: described.resources.map((resource) => ({
      type: ConfigResourceTypes.TOPIC, name: resource.resourceName, configEntries: [
        ...resource.configEntries.filter((entry) => entry.configSource === ConfigSource.TOPIC_CONFIG && entry.configName !== 'max.message.bytes')
          .map((entry) => ({ name: entry.configName, value: entry.configValue })),
        ...(bytes === undefined ? [] : [{ name: 'max.message.bytes', value: String(bytes) }]),
      ],
    })) });
    // The controller takes the change at once; the broker applies it a moment later. Until it
    // describes the new limit, a record sent to it meets the old one.
    const applied = async () => (await admin.describeConfigs({ includeSynonyms: false, resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })) }))
      .resources.every((resource) => {
        const entry = resource.configEntries.find((e) => e.configName === 'max.message.bytes');
        return bytes === undefined ? entry?.configSource !== ConfigSource.TOPIC_CONFIG : entry?.configValue === String(bytes);
      });
    await eventually(async () => (await applied()) || undefined, `max.message.bytes ${bytes ?? '(the default)'} on ${topics.join(', ')}`);
  } finally {
    await admin.disconnect();
  }
}
