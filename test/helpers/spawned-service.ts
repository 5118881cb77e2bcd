// Starts the real service as a child process (`cli/main.ts serve`) under Node or Deno, with its own database, topics and port.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Kafka, logLevel } from 'kafkajs';
import { createApiKey, SCOPES } from '../../domain/access/key-store.ts';
import { createCatalog } from '../../domain/access/catalogs.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { silenceKafkajsTimerWarning } from '../../platform/kafka/kafkajs-quirks.ts';
import { allTopicNames } from '../../platform/kafka/topics.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { freePort } from '../../scripts/free-port.ts';
import { freshDatabase } from './database.ts';
import { sharedBrokers, topicPrefixFor } from './kafka.ts';
import { RUNTIMES, runtimeCommand } from './runtime.ts';
import type { Runtime } from './runtime.ts';
import type { Tenant } from './service.ts';
import { cliActor } from '../../platform/actor.ts';

export type { Runtime };
export { RUNTIMES };

const ROOT = resolve(import.meta.dirname, '../..');

/** The secrets key test services run with (32 bytes, base64), unless a test gives its own. */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 'catalog-test-secrets-key').toString('base64');
// Start-up runs migrations, connects to Kafka and creates topics; on a busy 2-core machine under
// Deno that can take tens of seconds, so wait generously but stop at once if it exits.
const START_TIMEOUT_MS = 180_000;
// `service.close()` drains HTTP (10 s grace) and commits consumer offsets before exiting.
const STOP_TIMEOUT_MS = 60_000;
// Output kept for diagnostics: the end of each stream, so a long run cannot grow without bound.
const KEEP_OUTPUT_BYTES = 4 * 1024 * 1024;

/** A `serve` process: its address, its output, and its end. */
export interface ServiceProcess {
  readonly runtime: Runtime;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `http://127.0.0.1:<OPS_PORT>`: /metrics, /healthz, /readyz. */
  readonly opsUrl: string;
  readonly child: ChildProcess;
  /** What the process wrote so far (the last few MB of each stream). */
  output(): { stdout: string; stderr: string };
  /** The JSON log lines (pino) that carry this request id. */
  logFor(requestId: string): Array<Record<string, unknown>>;
  /** Whether the process is still running. */
  alive(): boolean;
  /** SIGTERM, then wait for the exit (SIGKILL after a grace period). */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface SpawnedService extends ServiceProcess {
  /** `url` + `/api/v1/catalog` */
  readonly apiUrl: string;
  readonly databaseUrl: string;
  readonly topicPrefix: string;
  /** A new catalog with one key (default: every scope, `enterprise` tier). */
  newTenant(options?: { scopes?: string[]; tier?: string; name?: string }): Promise<Tenant>;
  /** Another key for an existing catalog. */
  newKey(catalogId: string, options?: { scopes?: string[]; tier?: string }): Promise<Tenant>;
  /** Stops the process, then drops the run's topics and data folder. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface SpawnOptions {
  /** Extra environment for the child (wins over the defaults). */
  env?: Record<string, string>;
  /** Arguments after `serve`, e.g. `['--role', 'api']`. */
  serveArgs?: string[];
}

class Tail {
  private chunks: Buffer[] = [];
  private size = 0;
  push(chunk: Buffer) {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > KEEP_OUTPUT_BYTES && this.chunks.length > 1) this.size -= this.chunks.shift()!.length;
  }
  text() {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/**
 * Starts `cli/main.ts serve` under `runtime` with exactly `env` (which must name a PORT and an
 * OPS_PORT other than 0) and resolves once `/readyz` answers 200, or rejects with the process's
 * last words: on the API port, or on the operations port for a consumers process, which serves no API.
 */
export async function launchService(runtime: Runtime, env: Record<string, string | undefined>, serveArgs: string[] = []): Promise<ServiceProcess> {
  const { command, args } = runtimeCommand(runtime, ['serve', ...serveArgs]);
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout = new Tail();
  const stderr = new Tail();
  child.stdout!.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    child.once('exit', (code, signal) => done({ code, signal }));
  });
  let running = true;
  void exited.then(() => { running = false; });
  const launched: ServiceProcess = {
    runtime,
    url: `http://${env.HOST ?? '127.0.0.1'}:${env.PORT}`,
    opsUrl: `http://${env.OPS_HOST ?? '127.0.0.1'}:${env.OPS_PORT ?? 9464}`,
    child,
    output: () => ({ stdout: stdout.text(), stderr: stderr.text() }),
    logFor(requestId) {
      const lines: Array<Record<string, unknown>> = [];
      for (const line of `${stdout.text()}\n${stderr.text()}`.split('\n')) {
        if (!line.includes(requestId)) continue;
        try {
          lines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          lines.push({ msg: line });
        }
      }
      return lines;
    },
    alive: () => running,
    async stop() {
      if (running) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
  try {
    const roleAt = serveArgs.indexOf('--role');
    const role = (roleAt >= 0 ? serveArgs[roleAt + 1] : undefined) ?? env.ROLE ?? 'all';
    await waitUntilReady(launched, role === 'consumers' ? launched.opsUrl : launched.url, exited);
  } catch (error) {
    await launched.stop();
    const { stderr: err, stdout: out } = launched.output();
    throw new Error(`${(error as Error).message}\n--- stderr ---\n${err.slice(-4000)}\n--- stdout ---\n${out.slice(-4000)}`);
  }
  return launched;
}

/** Deletes the topics of a prefix on the shared brokers (a test's own, at its end). */
export async function dropTopics(brokers: string[], topicPrefix: string): Promise<void> {
  silenceKafkajsTimerWarning();
  const admin = new Kafka({ clientId: 'test-spawned-service', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: allTopicNames(topicPrefix) });
  } finally {
    await admin.disconnect();
  }
}

let tenantCounter = 0;

/**
 * Starts the service for test file `file` under `runtime`. The database and topic prefix are
 * named after the file and the runtime, so the same file can run both runtimes side by side.
 */
export async function spawnService(file: string, runtime: Runtime, options: SpawnOptions = {}): Promise<SpawnedService> {
  const label = `${basename(file).replace(/\.test\.ts$/, '')}-${runtime}`;
  const databaseUrl = await freshDatabase(label);
  const topicPrefix = topicPrefixFor(label);
  const brokers = await sharedBrokers();
  // The test's own door to the database: migrations first (the child finds them applied), then keys.
  const orm: Orm = await openDatabase({ databaseUrl, logger: createLogger('silent'), poolSize: 2 });
  const dataDir = mkdtempSync(join(tmpdir(), `catalog-${runtime}-`));
  const cleanUp = async () => {
    await orm.close();
    await dropTopics(brokers, topicPrefix).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  };
  let launched: ServiceProcess;
  try {
    launched = await launchService(runtime, {
      ...process.env,
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      OPS_PORT: String(await freePort()),
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: brokers.join(','),
      KAFKA_TOPIC_PREFIX: topicPrefix,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      SIGNING_SECRET: 'test-signing-secret-0123456789abcdef0123456789',
      SECRETS_KEY: TEST_SECRETS_KEY,
      DATA_DIR: dataDir,
      STORAGE_DIR: join(dataDir, 'storage'),
      ...options.env,
    }, options.serveArgs);
  } catch (error) {
    await cleanUp();
    throw error;
  }

  const issue = async (catalogId: string, scopes: string[], tier: string): Promise<Tenant> => {
    const issued = await createApiKey(orm.em.fork(), { catalogId, scopes, tier }, cliActor());
    return { catalogId, keyId: issued.record.id, key: issued.key };
  };

  return {
    ...launched,
    apiUrl: `${launched.url}/api/v1/catalog`,
    databaseUrl,
    topicPrefix,
    async newTenant(tenantOptions = {}) {
      tenantCounter += 1;
      const catalog = await createCatalog(orm.em.fork(), {
        name: tenantOptions.name ?? `${label}-${process.pid}-${tenantCounter}-${Date.now()}`,
        ownerEmail: `owner${tenantCounter}@merchant.example`,
      }, cliActor());
      return issue(catalog.id, tenantOptions.scopes ?? [...SCOPES], tenantOptions.tier ?? 'enterprise');
    },
    newKey: (catalogId, keyOptions = {}) => issue(catalogId, keyOptions.scopes ?? [...SCOPES], keyOptions.tier ?? 'enterprise'),
    async stop() {
      const result = await launched.stop();
      await cleanUp();
      return result;
    },
  };
}

async function waitUntilReady(service: ServiceProcess, baseUrl: string, exited: Promise<unknown>): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  let gone = false;
  void exited.then(() => { gone = true; });
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (gone) throw new Error(`the ${service.runtime} service exited during start-up`);
    try {
      const response = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(5_000) });
      last = `${response.status} ${await response.text()}`;
      if (response.status === 200) return;
    } catch (error) {
      last = (error as Error).message;
    }
    await delay(200);
  }
  throw new Error(`the ${service.runtime} service was not ready within ${START_TIMEOUT_MS} ms (last /readyz: ${last})`);
}
