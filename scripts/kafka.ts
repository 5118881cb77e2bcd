// Starts, stops and reports a local single-node KRaft Apache Kafka broker run from the Maven Central jars (dev and tests).
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KAFKA_VERSION, ensureJars } from './kafka/jars.ts';
import { isAlive, portOpen, tryLock } from './kafka/process.ts';
import { brokersAnswer } from '../platform/kafka/probe.ts';
import type { Logger } from '../platform/log/logger.ts';

export { KAFKA_VERSION, ensureJars };

const DEFAULT_PORT = 9092;
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

const ASSETS = join(dirname(fileURLToPath(import.meta.url)), 'kafka');

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

interface Paths { root: string; logDirs: string; properties: string; pidFile: string; logFile: string; lockFile: string }

function pathsOf(opts: KafkaOptions): Paths {
  const root = resolve(opts.dataDir, 'kafka');
  return {
    root,
    logDirs: join(root, 'log-dirs'),
    properties: join(root, 'server.properties'),
    pidFile: join(root, 'kafka.pid'),
    logFile: join(root, 'server.log'),
    // One lock per port for the whole machine, not per data folder: two clones (two data
    // folders) starting the same port's broker at once must not both launch one.
    lockFile: join(tmpdir(), `catalog-kafka-${portOf(opts)}.start.lock`),
  };
}

const portOf = (opts: KafkaOptions): number => opts.port ?? DEFAULT_PORT;
const brokersOf = (opts: KafkaOptions): string[] => [`127.0.0.1:${portOf(opts)}`];
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));
const javaBin = (): string => (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java');

/** True when a broker on these addresses answers a real metadata request. */
export async function kafkaAnswers(brokers: string[], timeoutMs = 3000): Promise<boolean> {
  const first = brokers[0]?.split(':')[1];
  // A closed port answers at once, without building a client.
  if (first !== undefined && !(await portOpen(Number(first)))) return false;
  return brokersAnswer(brokers, timeoutMs);
}

/** The pid from the pid file when that process is still our broker (guards against pid reuse). */
function brokerPid(paths: Paths): number | undefined {
  if (!existsSync(paths.pidFile)) return undefined;
  const pid = Number(readFileSync(paths.pidFile, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (!cmdline.includes('kafka.Kafka') || !cmdline.includes(paths.properties)) return undefined;
  } catch {
    // No /proc (not Linux): trust the pid file.
  }
  return pid;
}

function logTail(paths: Paths, lines = 40): string {
  if (!existsSync(paths.logFile)) return '(no broker log)';
  return readFileSync(paths.logFile, 'utf8').split('\n').slice(-lines).join('\n');
}

function writeProperties(paths: Paths, opts: KafkaOptions): void {
  const values: Record<string, string> = {
    PORT: String(portOf(opts)),
    CONTROLLER_PORT: String(opts.controllerPort ?? portOf(opts) + 1),
    LOG_DIRS: paths.logDirs,
  };
  const template = readFileSync(join(ASSETS, 'server.properties'), 'utf8');
  writeFileSync(paths.properties, template.replace(/\$\{(\w+)\}/g, (_, name: string) => values[name] ?? ''));
}

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

/** KRaft refuses to start on an unformatted log folder; format it once with a fresh cluster id. */
function formatStorage(paths: Paths, libs: string, logger?: Logger): void {
  if (existsSync(join(paths.logDirs, 'meta.properties'))) return;
  const clusterId = newClusterId();
  const format = spawnSync(javaBin(), ['-cp', join(libs, '*'), `-Dlog4j2.configurationFile=${join(ASSETS, 'log4j2.yaml')}`,
    'kafka.tools.StorageTool', 'format', '--standalone', `--cluster-id=${clusterId}`, '-c', paths.properties], { encoding: 'utf8' });
  if (format.error || format.status !== 0) {
    throw new Error(`Kafka storage format failed:\n${format.error ?? ''}${format.stdout}${format.stderr}`);
  }
  logger?.info({ clusterId, logDirs: paths.logDirs }, 'formatted Kafka storage');
}

function launch(paths: Paths, libs: string): number {
  if (existsSync(paths.logFile)) renameSync(paths.logFile, `${paths.logFile}.1`);
  const out = openSync(paths.logFile, 'a');
  try {
    const child = spawn(javaBin(), [
      '-Xms128m', '-Xmx512m', '-XX:+UseG1GC', '-XX:MaxGCPauseMillis=20', '-Djava.awt.headless=true',
      `-Dlog4j2.configurationFile=${join(ASSETS, 'log4j2.yaml')}`, `-Dkafka.logs.dir=${paths.root}`,
      '-cp', join(libs, '*'), 'kafka.Kafka', paths.properties,
    ], { cwd: paths.root, detached: true, stdio: ['ignore', out, out] });
    // Detached in its own process group, so it outlives the script or test that started it.
    child.unref();
    if (child.pid === undefined) throw new Error(`could not run ${javaBin()} (is Java 17+ installed?)`);
    writeFileSync(paths.pidFile, `${child.pid}\n`);
    return child.pid;
  } finally {
    closeSync(out);
  }
}

async function waitReady(opts: KafkaOptions, paths: Paths, pid: number | undefined): Promise<void> {
  const deadline = Date.now() + (opts.startTimeoutMs ?? START_TIMEOUT_MS);
  while (Date.now() < deadline) {
    if (pid !== undefined && !isAlive(pid)) {
      throw new Error(`Kafka broker exited during start-up; last lines of ${paths.logFile}:\n${logTail(paths)}`);
    }
    if (await kafkaAnswers(brokersOf(opts), 2000)) return;
    await sleep(250);
  }
  throw new Error(`Kafka broker on port ${portOf(opts)} not ready within ${(opts.startTimeoutMs ?? START_TIMEOUT_MS) / 1000} s; `
    + `last lines of ${paths.logFile}:\n${logTail(paths)}`);
}

/** Starts the broker unless one already answers on the port; resolves once it serves metadata. */
export async function startKafka(opts: KafkaOptions): Promise<KafkaHandle> {
  const brokers = brokersOf(opts);
  const paths = pathsOf(opts);
  if (await kafkaAnswers(brokers)) return { brokers, started: false };
  mkdirSync(paths.root, { recursive: true });
  if (!tryLock(paths.lockFile)) {
    opts.logger?.info({ brokers }, 'another process is starting Kafka; waiting for it');
    await waitReady(opts, paths, undefined);
    return { brokers, started: false };
  }
  try {
    // Whoever held the lock before may have started it meanwhile.
    if (await kafkaAnswers(brokers)) return { brokers, started: false };
    const running = brokerPid(paths);
    if (running !== undefined) {
      // Our broker is alive but not answering yet: still booting, or recovering its logs.
      await waitReady(opts, paths, running);
      return { brokers, started: false };
    }
    if (await portOpen(portOf(opts))) {
      // A broker from another data folder still booting answers soon; anything else never does.
      await waitReady(opts, paths, undefined).catch(() => {
        throw new Error(`port ${portOf(opts)} is taken by something that does not answer Kafka metadata`);
      });
      return { brokers, started: false };
    }
    const libs = ensureJars(opts.logger);
    writeProperties(paths, opts);
    formatStorage(paths, libs, opts.logger);
    const began = Date.now();
    const pid = launch(paths, libs);
    opts.logger?.info({ pid, brokers, logFile: paths.logFile }, 'starting Kafka broker');
    await waitReady(opts, paths, pid);
    opts.logger?.info({ pid, brokers, ms: Date.now() - began }, 'Kafka broker ready');
    return { brokers, started: true };
  } finally {
    rmSync(paths.lockFile, { force: true });
  }
}

/** The local broker's addresses, starting it first when nothing answers on the port. */
export const ensureKafka = startKafka;

/** Stops the broker this data folder started: SIGTERM (controlled shutdown), SIGKILL after 30 s. */
export async function stopKafka(opts: KafkaOptions): Promise<{ stopped: boolean }> {
  const paths = pathsOf(opts);
  const pid = brokerPid(paths);
  if (pid === undefined) {
    rmSync(paths.pidFile, { force: true });
    return { stopped: false };
  }
  const signal = (name: NodeJS.Signals) => { try { process.kill(pid, name); } catch { /* already gone */ } };
  signal('SIGTERM');
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) {
    opts.logger?.warn({ pid }, 'Kafka broker ignored SIGTERM; killing it');
    signal('SIGKILL');
    while (isAlive(pid)) await sleep(100);
  }
  // Clients must see a closed port before the caller assumes the broker is gone (bounded, in
  // case another process takes the port at once).
  const portDeadline = Date.now() + 5000;
  while (Date.now() < portDeadline && (await portOpen(portOf(opts)))) await sleep(100);
  if (existsSync(paths.pidFile)) unlinkSync(paths.pidFile);
  opts.logger?.info({ pid }, 'Kafka broker stopped');
  return { stopped: true };
}

export async function kafkaStatus(opts: KafkaOptions): Promise<KafkaStatus> {
  const paths = pathsOf(opts);
  const brokers = brokersOf(opts);
  return { ready: await kafkaAnswers(brokers), pid: brokerPid(paths), brokers, logFile: paths.logFile };
}

async function cli(argv: string[]): Promise<number> {
  const { loadConfig } = await import('../platform/config/config.ts');
  const { createLogger } = await import('../platform/log/logger.ts');
  const config = loadConfig();
  const portFlag = argv.indexOf('--port');
  const port = portFlag >= 0 ? Number(argv[portFlag + 1]) : DEFAULT_PORT;
  if (!Number.isInteger(port) || port < 1 || port > 65534) throw new Error(`--port must be a port number, got "${argv[portFlag + 1]}"`);
  const opts: KafkaOptions = { dataDir: config.dataDir, port, logger: createLogger(config.logLevel) };
  switch (argv[0]) {
    case 'start': {
      const { brokers, started } = await startKafka(opts);
      console.log(started ? `Kafka ${KAFKA_VERSION} started on ${brokers.join(',')}` : `Kafka already running on ${brokers.join(',')}`);
      return 0;
    }
    case 'stop': {
      const { stopped } = await stopKafka(opts);
      console.log(stopped ? 'Kafka stopped' : 'no Kafka broker from this data folder is running');
      return 0;
    }
    case 'status': {
      const status = await kafkaStatus(opts);
      console.log(JSON.stringify(status, null, 2));
      return status.ready ? 0 : 1;
    }
    default:
      console.error('usage: node scripts/kafka.ts start|stop|status [--port 9092]');
      return 2;
  }
}

if (import.meta.main) {
  cli(process.argv.slice(2)).then((code) => process.exit(code), (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
