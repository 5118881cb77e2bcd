// Starts, stops and reports the local KRaft Apache Kafka run from the Maven Central jars (dev and tests): one broker, or a cluster of several.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { KAFKA_VERSION, ensureJars } from './kafka/jars.ts';
import { brokerOf, describedBrokers, formatStorage, launch, newClusterId, nodeFiles, nodePid, stopNode, waitReady, writeProperties } from './kafka/node.ts';
import type { KafkaNode } from './kafka/node.ts';
import { portOpen, tryLock } from './kafka/process.ts';
import { brokersAnswer } from '../platform/kafka/probe.ts';
import type { Logger } from '../platform/log/logger.ts';

export { KAFKA_VERSION, ensureJars, newClusterId };

export const DEFAULT_PORT = 9092;
export const CLUSTER_PORT = 19092;
const START_TIMEOUT_MS = 60_000;
// Several JVMs booting at once on a 2-core machine take longer than one.
const CLUSTER_START_TIMEOUT_MS = 120_000;

export interface KafkaOptions {
  /** The service's data folder (config.dataDir); the broker lives in `<dataDir>/kafka`. */
  readonly dataDir: string;
  readonly port?: number;
  /** KRaft controller listener; defaults to port + 1. */
  readonly controllerPort?: number;
  readonly logger?: Logger;
  readonly startTimeoutMs?: number;
}

export interface KafkaHandle {
  readonly brokers: string[];
  /** True when this call launched the broker, false when one was already answering. */
  readonly started: boolean;
}

export interface KafkaStatus {
  readonly ready: boolean;
  readonly pid: number | undefined;
  readonly brokers: string[];
  readonly logFile: string;
}

// One lock per port for the whole machine, not per data folder: two clones (two data folders)
// starting the same port's broker at once must not both launch one.
const lockFileOf = (kind: string, port: number): string => join(tmpdir(), `catalog-${kind}-${port}.start.lock`);

function singleNode(opts: KafkaOptions): KafkaNode {
  const port = opts.port ?? DEFAULT_PORT;
  return { root: resolve(opts.dataDir, 'kafka'), id: 1, port, controllerPort: opts.controllerPort ?? port + 1,
    voters: undefined, replicationFactor: 1, minInsyncReplicas: 1 };
}

/** True when a broker on these addresses answers a real metadata request. */
export async function kafkaAnswers(brokers: string[], timeoutMs = 3000): Promise<boolean> {
  const first = brokers[0]?.split(':')[1];
  // A closed port answers at once, without building a client.
  if (first !== undefined && !(await portOpen(Number(first)))) return false;
  return brokersAnswer(brokers, timeoutMs);
}

/** Starts the broker unless one already answers on the port; resolves once it serves metadata. */
export async function startKafka(opts: KafkaOptions): Promise<KafkaHandle> {
  const node = singleNode(opts);
  const brokers = [brokerOf(node)];
  const ready = () => kafkaAnswers(brokers, 2000);
  const wait = (pid: number | undefined) => waitReady([{ node, pid }], ready, opts.startTimeoutMs ?? START_TIMEOUT_MS, `Kafka broker on port ${node.port}`);
  if (await kafkaAnswers(brokers)) return { brokers, started: false };
  mkdirSync(node.root, { recursive: true });
  const lockFile = lockFileOf('kafka', node.port);
  if (!tryLock(lockFile)) {
    opts.logger?.info({ brokers }, 'another process is starting Kafka; waiting for it');
    await wait(undefined);
    return { brokers, started: false };
  }
  try {
    // Whoever held the lock before may have started it meanwhile.
    if (await kafkaAnswers(brokers)) return { brokers, started: false };
    const running = nodePid(node);
    if (running !== undefined) {
      // Our broker is alive but not answering yet: still booting, or recovering its logs.
      await wait(running);
      return { brokers, started: false };
    }
    if (await portOpen(node.port)) {
      // A broker from another data folder still booting answers soon; anything else never does.
      await wait(undefined).catch(() => {
        throw new Error(`port ${node.port} is taken by something that does not answer Kafka metadata`);
      });
      return { brokers, started: false };
    }
    const libs = ensureJars(opts.logger);
    writeProperties(node);
    await formatStorage(node, libs, newClusterId(), opts.logger);
    const began = Date.now();
    const pid = launch(node, libs);
    opts.logger?.info({ pid, brokers, logFile: nodeFiles(node).logFile }, 'starting Kafka broker');
    await wait(pid);
    opts.logger?.info({ pid, brokers, ms: Date.now() - began }, 'Kafka broker ready');
    return { brokers, started: true };
  } finally {
    rmSync(lockFile, { force: true });
  }
}

/** The local broker's addresses, starting it first when nothing answers on the port. */
export const ensureKafka = startKafka;

/** Stops the broker this data folder started: SIGTERM (controlled shutdown), SIGKILL after 30 s. */
export async function stopKafka(opts: KafkaOptions): Promise<{ stopped: boolean }> {
  return { stopped: await stopNode(singleNode(opts), 'SIGTERM', opts.logger) };
}

export async function kafkaStatus(opts: KafkaOptions): Promise<KafkaStatus> {
  const node = singleNode(opts);
  const brokers = [brokerOf(node)];
  return { ready: await kafkaAnswers(brokers), pid: nodePid(node), brokers, logFile: nodeFiles(node).logFile };
}

export interface KafkaClusterOptions {
  /** The service's data folder (config.dataDir); node i lives in `<dataDir>/kafka-cluster/node-<i>`. */
  readonly dataDir: string;
  /** How many nodes, each a broker and a controller voter: 2 or more, 3 by default. */
  readonly nodes?: number;
  /** Node i's broker port is port + 2(i - 1), its controller's the one after; 19092 by default. */
  readonly port?: number;
  readonly logger?: Logger;
  readonly startTimeoutMs?: number;
}

export interface KafkaClusterStatus {
  /** Every node answers and lists all the nodes as brokers. */
  readonly ready: boolean;
  readonly brokers: string[];
  readonly nodes: Array<{ id: number; broker: string; pid: number | undefined; listsBrokers: number[]; logFile: string }>;
}

interface Cluster { root: string; nodes: KafkaNode[]; brokers: string[] }

function clusterOf(opts: KafkaClusterOptions): Cluster {
  const count = opts.nodes ?? 3;
  if (!Number.isInteger(count) || count < 2) throw new Error(`a Kafka cluster has 2 or more nodes, not ${count}`);
  const port = opts.port ?? CLUSTER_PORT;
  const root = resolve(opts.dataDir, 'kafka-cluster');
  const ids = Array.from({ length: count }, (_, i) => i + 1);
  const voters = ids.map((id) => `${id}@127.0.0.1:${port + 2 * (id - 1) + 1}`).join(',');
  const nodes = ids.map((id): KafkaNode => ({
    root: join(root, `node-${id}`), id, port: port + 2 * (id - 1), controllerPort: port + 2 * (id - 1) + 1, voters,
    // Three copies with two in sync: acks=all goes on through one node's loss. Two nodes can keep
    // two copies, and must accept one in sync to survive a loss at all.
    replicationFactor: Math.min(count, 3), minInsyncReplicas: count >= 3 ? 2 : 1,
  }));
  return { root, nodes, brokers: nodes.map(brokerOf) };
}

function nodeOf(opts: KafkaClusterOptions, nodeId: number): { cluster: Cluster; node: KafkaNode } {
  const cluster = clusterOf(opts);
  const node = cluster.nodes.find((n) => n.id === nodeId);
  if (!node) throw new Error(`the Kafka cluster has nodes 1 to ${cluster.nodes.length}, not ${nodeId}`);
  return { cluster, node };
}

/**
 * The id all nodes are formatted with. Kept in the cluster's folder, so that a wiped node is
 * formatted into the same cluster and rejoins it, together with the shape its voters were made for.
 */
function clusterIdOf(cluster: Cluster, create: boolean): string {
  const file = join(cluster.root, 'cluster.json');
  const shape = { nodes: cluster.nodes.length, port: cluster.nodes[0]!.port };
  if (existsSync(file)) {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as { clusterId: string; nodes: number; port: number };
    if (kept.nodes !== shape.nodes || kept.port !== shape.port) {
      throw new Error(`${cluster.root} holds a cluster of ${kept.nodes} nodes from port ${kept.port}, not ${shape.nodes} from ${shape.port}; `
        + 'stop it and delete the folder to change its shape');
    }
    return kept.clusterId;
  }
  if (!create) throw new Error(`no Kafka cluster in ${cluster.root}: start it first`);
  const clusterId = newClusterId();
  mkdirSync(cluster.root, { recursive: true });
  writeFileSync(file, `${JSON.stringify({ clusterId, ...shape }, null, 2)}\n`);
  return clusterId;
}

/** What each node answers for the cluster's brokers (empty when it does not answer). */
const brokersListed = (cluster: Cluster): Promise<number[][]> => Promise.all(cluster.nodes.map((node) => describedBrokers([brokerOf(node)], 2000)));
const allListed = (cluster: Cluster, listed: number[][]): boolean => listed.every((ids) => ids.length === cluster.nodes.length);

async function portsFree(node: KafkaNode): Promise<void> {
  if ((await portOpen(node.port)) || (await portOpen(node.controllerPort))) {
    throw new Error(`port ${node.port} or ${node.controllerPort} of Kafka node ${node.id} is taken by another process`);
  }
}

/** Launches a node that is not running, after checking its ports are free and formatting its storage if new. */
async function launchNode(node: KafkaNode, clusterId: string, logger?: Logger): Promise<number> {
  await portsFree(node);
  const libs = ensureJars(logger);
  writeProperties(node);
  await formatStorage(node, libs, clusterId, logger);
  const pid = launch(node, libs);
  logger?.info({ pid, nodeId: node.id, broker: brokerOf(node), logFile: nodeFiles(node).logFile }, 'starting Kafka node');
  return pid;
}

/**
 * Starts every node of the cluster that is not running; resolves once each node answers a
 * metadata request and lists all of them as brokers.
 */
export async function startKafkaCluster(opts: KafkaClusterOptions): Promise<KafkaHandle> {
  const cluster = clusterOf(opts);
  const { brokers } = cluster;
  const ready = async () => allListed(cluster, await brokersListed(cluster));
  const timeoutMs = opts.startTimeoutMs ?? CLUSTER_START_TIMEOUT_MS;
  const what = `Kafka cluster on ${brokers.join(',')}`;
  if (await ready()) return { brokers, started: false };
  const lockFile = lockFileOf('kafka-cluster', cluster.nodes[0]!.port);
  if (!tryLock(lockFile)) {
    opts.logger?.info({ brokers }, 'another process is starting this Kafka cluster; waiting for it');
    await waitReady(cluster.nodes.map((node) => ({ node, pid: undefined })), ready, timeoutMs, what);
    return { brokers, started: false };
  }
  try {
    const clusterId = clusterIdOf(cluster, true);
    const began = Date.now();
    const idle = cluster.nodes.filter((node) => nodePid(node) === undefined);
    // All checked before any launch, so that a taken port leaves no cluster half started.
    for (const node of idle) await portsFree(node);
    const watched = await Promise.all(cluster.nodes.map(async (node) => ({ node, pid: nodePid(node) ?? await launchNode(node, clusterId, opts.logger) })));
    await waitReady(watched, ready, timeoutMs, what);
    opts.logger?.info({ brokers, ms: Date.now() - began }, 'Kafka cluster ready');
    return { brokers, started: idle.length > 0 };
  } finally {
    rmSync(lockFile, { force: true });
  }
}

/** Stops every node of the cluster at once, each with a controlled shutdown (SIGKILL after 30 s). */
export async function stopKafkaCluster(opts: KafkaClusterOptions): Promise<{ stopped: boolean }> {
  const stopped = await Promise.all(clusterOf(opts).nodes.map((node) => stopNode(node, 'SIGTERM', opts.logger)));
  return { stopped: stopped.some(Boolean) };
}

export async function kafkaClusterStatus(opts: KafkaClusterOptions): Promise<KafkaClusterStatus> {
  const cluster = clusterOf(opts);
  const listed = await brokersListed(cluster);
  return {
    ready: allListed(cluster, listed),
    brokers: cluster.brokers,
    nodes: cluster.nodes.map((node, i) => ({ id: node.id, broker: brokerOf(node), pid: nodePid(node), listsBrokers: listed[i]!, logFile: nodeFiles(node).logFile })),
  };
}

/** Crashes one node, as `kill -9` would: no controlled shutdown, its partitions lose their leader. */
export async function killKafkaNode(opts: KafkaClusterOptions, nodeId: number): Promise<{ stopped: boolean }> {
  return { stopped: await stopNode(nodeOf(opts, nodeId).node, 'SIGKILL', opts.logger) };
}

/** Stops one node with a controlled shutdown: its partitions are led elsewhere first. */
export async function stopKafkaNode(opts: KafkaClusterOptions, nodeId: number): Promise<{ stopped: boolean }> {
  return { stopped: await stopNode(nodeOf(opts, nodeId).node, 'SIGTERM', opts.logger) };
}

/** Starts one stopped, killed or wiped node on its data; resolves once it answers and lists itself as a broker. */
export async function startKafkaNode(opts: KafkaClusterOptions, nodeId: number): Promise<KafkaHandle> {
  const { cluster, node } = nodeOf(opts, nodeId);
  const running = nodePid(node);
  const pid = running ?? await launchNode(node, clusterIdOf(cluster, false), opts.logger);
  const broker = brokerOf(node);
  await waitReady([{ node, pid }], async () => (await describedBrokers([broker], 2000)).includes(node.id),
    opts.startTimeoutMs ?? START_TIMEOUT_MS, `Kafka node ${node.id} on ${broker}`);
  return { brokers: [broker], started: running === undefined };
}

/**
 * A node that lost its disk: killed, its log folders deleted and formatted again into the same
 * cluster, so that once started it copies every partition it holds from the others.
 */
export async function wipeKafkaNode(opts: KafkaClusterOptions, nodeId: number): Promise<void> {
  const { cluster, node } = nodeOf(opts, nodeId);
  const clusterId = clusterIdOf(cluster, false);
  await stopNode(node, 'SIGKILL', opts.logger);
  rmSync(nodeFiles(node).logDirs, { recursive: true, force: true });
  writeProperties(node);
  await formatStorage(node, ensureJars(opts.logger), clusterId, opts.logger);
}

// The command line, loaded only when this file is run; not awaited, as it imports this module, which must finish loading first.
if (import.meta.main) void import('./kafka/cli.ts').then(({ main }) => main(process.argv.slice(2)));
