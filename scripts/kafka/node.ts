// One KRaft node of the local Kafka (the single broker, or one member of a cluster): its properties, storage, process, log and stop.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { silenceKafkajsTimerWarning } from '../../platform/kafka/kafkajs-quirks.ts';
import type { Logger } from '../../platform/log/logger.ts';
import { isAlive, portOpen } from './process.ts';

const ASSETS = dirname(fileURLToPath(import.meta.url));
const STOP_TIMEOUT_MS = 30_000;

export interface KafkaNode {
  /** The node's folder: its properties, pid file, log and log dirs. */
  readonly root: string;
  readonly id: number;
  readonly port: number;
  readonly controllerPort: number;
  /**
   * The cluster's static quorum (`1@127.0.0.1:19093,2@…`), or undefined for a node that is its
   * own quorum: the single broker, formatted `--standalone`.
   */
  readonly voters: string | undefined;
  /** Copies of every topic, the internal ones included, and how many must be in sync for acks=all. */
  readonly replicationFactor: number;
  readonly minInsyncReplicas: number;
}

export interface NodeFiles { logDirs: string; properties: string; pidFile: string; logFile: string }

export function nodeFiles(node: KafkaNode): NodeFiles {
  return {
    logDirs: join(node.root, 'log-dirs'),
    properties: join(node.root, 'server.properties'),
    pidFile: join(node.root, 'kafka.pid'),
    logFile: join(node.root, 'server.log'),
  };
}

const nameOf = (node: KafkaNode): string => (node.voters === undefined ? 'Kafka broker' : `Kafka node ${node.id}`);
export const brokerOf = (node: KafkaNode): string => `127.0.0.1:${node.port}`;
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));
const javaBin = (): string => (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java');

/**
 * 16 random bytes in base64url, as `kafka-storage random-uuid` makes them, and like Kafka's own
 * never starting with `-`: the tool's argument parser would take such an id for an option
 * (one format in 64 failed that way).
 */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** The pid from the pid file when that process is still this node (guards against pid reuse). */
export function nodePid(node: KafkaNode): number | undefined {
  const files = nodeFiles(node);
  if (!existsSync(files.pidFile)) return undefined;
  const pid = Number(readFileSync(files.pidFile, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (!cmdline.includes('kafka.Kafka') || !cmdline.includes(files.properties)) return undefined;
  } catch {
    // No /proc (not Linux): trust the pid file.
  }
  return pid;
}

function logTail(node: KafkaNode, lines = 40): string {
  const { logFile } = nodeFiles(node);
  if (!existsSync(logFile)) return '(no broker log)';
  return readFileSync(logFile, 'utf8').split('\n').slice(-lines).join('\n');
}

export function writeProperties(node: KafkaNode): void {
  mkdirSync(node.root, { recursive: true });
  const values: Record<string, string> = {
    NODE_ID: String(node.id),
    PORT: String(node.port),
    CONTROLLER_PORT: String(node.controllerPort),
    QUORUM: node.voters === undefined
      ? `controller.quorum.bootstrap.servers=127.0.0.1:${node.controllerPort}`
      : `controller.quorum.voters=${node.voters}`,
    LOG_DIRS: nodeFiles(node).logDirs,
    REPLICATION_FACTOR: String(node.replicationFactor),
    MIN_INSYNC_REPLICAS: String(node.minInsyncReplicas),
  };
  const template = readFileSync(join(ASSETS, 'server.properties'), 'utf8');
  writeFileSync(nodeFiles(node).properties, template.replace(/\$\{(\w+)\}/g, (_, name: string) => values[name] ?? ''));
}

/**
 * KRaft refuses to start on an unformatted log folder; format it once. A standalone node makes its
 * own one-voter quorum; a cluster's nodes share one cluster id and the static voters of their
 * properties, so none of them is formatted `--standalone`.
 */
export async function formatStorage(node: KafkaNode, libs: string, clusterId: string, logger?: Logger): Promise<void> {
  const files = nodeFiles(node);
  if (existsSync(join(files.logDirs, 'meta.properties'))) return;
  // Not synchronous: a cluster's nodes are formatted side by side, one JVM start each.
  await promisify(execFile)(javaBin(), ['-cp', join(libs, '*'), `-Dlog4j2.configurationFile=${join(ASSETS, 'log4j2.yaml')}`,
    'kafka.tools.StorageTool', 'format', ...(node.voters === undefined ? ['--standalone'] : []),
    `--cluster-id=${clusterId}`, '-c', files.properties], { encoding: 'utf8' }).catch((error: unknown) => {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`Kafka storage format failed:\n${`${stdout}${stderr}` || String(error)}`);
  });
  logger?.info({ clusterId, nodeId: node.id, logDirs: files.logDirs }, 'formatted Kafka storage');
}

export function launch(node: KafkaNode, libs: string): number {
  const files = nodeFiles(node);
  if (existsSync(files.logFile)) renameSync(files.logFile, `${files.logFile}.1`);
  const out = openSync(files.logFile, 'a');
  try {
    const child = spawn(javaBin(), [
      '-Xms128m', '-Xmx512m', '-XX:+UseG1GC', '-XX:MaxGCPauseMillis=20', '-Djava.awt.headless=true',
      `-Dlog4j2.configurationFile=${join(ASSETS, 'log4j2.yaml')}`, `-Dkafka.logs.dir=${node.root}`,
      '-cp', join(libs, '*'), 'kafka.Kafka', files.properties,
    ], { cwd: node.root, detached: true, stdio: ['ignore', out, out] });
    // Detached in its own process group, so it outlives the script or test that started it.
    child.unref();
    if (child.pid === undefined) throw new Error(`could not run ${javaBin()} (is Java 17+ installed?)`);
    writeFileSync(files.pidFile, `${child.pid}\n`);
    return child.pid;
  } finally {
    closeSync(out);
  }
}

/** A node being waited for, and the pid it was launched with (undefined: another process launched it). */
export interface Watched { readonly node: KafkaNode; readonly pid: number | undefined }

/** Polls `ready` until it holds; fails at once, with the log's tail, when a watched node exits. */
export async function waitReady(watched: readonly Watched[], ready: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const tails = () => watched.map(({ node }) => `last lines of ${nodeFiles(node).logFile}:\n${logTail(node, watched.length > 1 ? 15 : 40)}`).join('\n');
  while (Date.now() < deadline) {
    const dead = watched.find(({ pid }) => pid !== undefined && !isAlive(pid));
    if (dead) throw new Error(`${nameOf(dead.node)} exited during start-up; last lines of ${nodeFiles(dead.node).logFile}:\n${logTail(dead.node)}`);
    if (await ready()) return;
    await sleep(250);
  }
  throw new Error(`${what} not ready within ${timeoutMs / 1000} s; ${tails()}`);
}

/**
 * Stops the node this folder started. SIGTERM is a controlled shutdown (its partitions lead
 * elsewhere first), SIGKILL after 30 s; SIGKILL alone is a crash, as `kill -9`.
 */
export async function stopNode(node: KafkaNode, signal: 'SIGTERM' | 'SIGKILL', logger?: Logger): Promise<boolean> {
  const { pidFile } = nodeFiles(node);
  const pid = nodePid(node);
  if (pid === undefined) {
    if (existsSync(pidFile)) unlinkSync(pidFile);
    return false;
  }
  const send = (name: NodeJS.Signals) => { try { process.kill(pid, name); } catch { /* already gone */ } };
  send(signal);
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) {
    logger?.warn({ pid }, `${nameOf(node)} ignored SIGTERM; killing it`);
    send('SIGKILL');
    while (isAlive(pid)) await sleep(100);
  }
  // Clients must see a closed port before the caller assumes the broker is gone (bounded, in
  // case another process takes the port at once).
  const portDeadline = Date.now() + 5000;
  while (Date.now() < portDeadline && (await portOpen(node.port))) await sleep(100);
  if (existsSync(pidFile)) unlinkSync(pidFile);
  logger?.info({ pid, signal }, `${nameOf(node)} stopped`);
  return true;
}

/**
 * The ids of the brokers a cluster lists, asked of these addresses (a fresh client, no retries,
 * no logs: a probe fails often while nodes boot or are away); empty when none answers.
 */
export async function describedBrokers(brokers: readonly string[], timeoutMs = 3000): Promise<number[]> {
  silenceKafkajsTimerWarning();
  const kafka = new Kafka({ clientId: 'catalog-kafka-probe', brokers: [...brokers], connectionTimeout: timeoutMs,
    requestTimeout: timeoutMs, retry: { retries: 0 }, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  try {
    await admin.connect();
    return (await admin.describeCluster()).brokers.map((b) => b.nodeId).sort((a, b) => a - b);
  } catch {
    return [];
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
