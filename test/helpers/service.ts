// Starts the real service for a test file, its own database and topic prefix: in this process under Node, or as a child process under Deno (TEST_RUNTIME).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApiKey } from '../../domain/access/key-store.ts';
import { createCatalog } from '../../domain/access/catalogs.ts';
import { loadConfig } from '../../platform/config/config.ts';
import type { Config } from '../../platform/config/config.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { startService } from '../../app/service.ts';
import { secretBoxOf } from '../../app/secrets.ts';
import { freePort } from '../../scripts/free-port.ts';
import { freshDatabase } from './database.ts';
import { sharedBrokers, topicPrefixFor } from './kafka.ts';
import { testRuntime } from './runtime.ts';
import type { Runtime } from './runtime.ts';
import { TEST_SECRETS_KEY, dropTopics, launchService } from './spawned-service.ts';
import { cliActor } from '../../platform/actor.ts';

export { TEST_SECRETS_KEY };

export interface TestService {
  readonly runtime: Runtime;
  url: string;
  /** The operations listener: /metrics, /healthz, /readyz. */
  opsUrl: string;
  /** The configuration the service was started with. */
  config: Config;
  databaseUrl: string;
  /** The test's door to the service's database (under Node, the service's own). */
  orm: Orm;
  /** The Kafka brokers the service uses, and its topics' full names. */
  kafka: { brokers: readonly string[]; topic(name: string): string };
  /** A new catalog with one key; `scopes` defaults to every scope. */
  newTenant(options?: { scopes?: string[]; tier?: string; name?: string }): Promise<Tenant>;
  /** The JSON lines the service logged so far (at its LOG_LEVEL: none at the default `silent` under Node). */
  logged(): Array<Record<string, unknown>>;
  /**
   * Holds the service still for `ms`, as a busy machine does: under Node this whole process
   * (a test's own servers too), under Deno the service's process alone (SIGSTOP, then SIGCONT).
   */
  stall(ms: number): Promise<void>;
  /** Stops the service; the file's topics go with the service that made its database. */
  close(): Promise<void>;
}

export interface Tenant {
  catalogId: string;
  keyId: string;
  key: string;
}

export const ALL_SCOPES = ['catalog:read', 'catalog:write', 'bulk_import:manage', 'webhooks:manage', 'stock:write', 'keys:manage', 'audit:read'];

let tenantCounter = 0;

export function testEnv(file: string, databaseUrl: string, overrides: Record<string, string> = {}): Record<string, string | undefined> {
  return {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    OPS_PORT: '0',
    DATABASE_URL: databaseUrl,
    KAFKA_TOPIC_PREFIX: topicPrefixFor(file),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SIGNING_SECRET: 'test-signing-secret-0123456789abcdef0123456789',
    // One key for every service of a file: a second one on the same database opens what the first sealed.
    SECRETS_KEY: TEST_SECRETS_KEY,
    DATA_DIR: mkdtempSync(join(tmpdir(), 'catalog-test-')),
    // Pools of a test's size: two suites side by side, each with two files' services running,
    // stay within a Postgres of 100 connections (docs/operations.md, "Connection budget").
    API_DATABASE_CONNECTIONS: '8',
    CONSUMERS_DATABASE_CONNECTIONS: '10',
    ...overrides,
  };
}

/**
 * The service for test file `file`, under the runtime TEST_RUNTIME names. A second service of
 * the same file shares the first's database (`DATABASE_URL` among the overrides) and topics.
 */
export async function startTestService(file: string, overrides: Record<string, string> = {}): Promise<TestService> {
  const runtime = testRuntime();
  const ownsTopics = overrides.DATABASE_URL === undefined;
  const databaseUrl = overrides.DATABASE_URL ?? await freshDatabase(file);
  const started = runtime === 'node' ? await inProcess(file, databaseUrl, overrides) : await childProcess(file, databaseUrl, overrides);
  const { config, orm } = started;
  return {
    runtime,
    url: started.url,
    opsUrl: started.opsUrl,
    config,
    databaseUrl,
    orm,
    kafka: { brokers: started.brokers, topic: (name) => `${config.kafkaTopicPrefix}${name}` },
    logged: () => started.log().split('\n').flatMap((line) => {
      if (!line.startsWith('{')) return [];
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    }),
    async newTenant(options = {}) {
      const em = orm.em.fork();
      tenantCounter += 1;
      const catalog = await createCatalog(em, {
        name: options.name ?? `tenant-${process.pid}-${tenantCounter}-${Date.now()}`,
        ownerEmail: `owner${tenantCounter}@merchant.example`,
      }, cliActor());
      const issued = await createApiKey(em, {
        catalogId: catalog.id,
        scopes: options.scopes ?? ALL_SCOPES,
        tier: options.tier ?? 'enterprise',
        environment: config.environment,
      }, cliActor());
      return { catalogId: catalog.id, keyId: issued.record.id, key: issued.key };
    },
    stall: (ms) => started.stall(ms),
    async close() {
      await started.stop();
      // Topics are per file and per run: drop them so the shared broker does not pile them up.
      if (ownsTopics) await dropTopics([...started.brokers], config.kafkaTopicPrefix).catch(() => undefined);
      rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}

interface Started {
  url: string;
  opsUrl: string;
  config: Config;
  orm: Orm;
  brokers: readonly string[];
  /** What the service logged so far. */
  log(): string;
  stall(ms: number): Promise<void>;
  stop(): Promise<void>;
}

// The end of what an in-process service logged, so a long run cannot grow without bound.
const KEEP_LOG_CHARS = 4 * 1024 * 1024;

async function inProcess(file: string, databaseUrl: string, overrides: Record<string, string>): Promise<Started> {
  const config = loadConfig(testEnv(file, databaseUrl, overrides));
  // Lines go to stdout as the service writes them, and are kept for the test to read.
  const kept: string[] = [];
  let size = 0;
  const sink = { write(line: string) {
    process.stdout.write(line);
    kept.push(line);
    size += line.length;
    while (size > KEEP_LOG_CHARS && kept.length > 1) size -= kept.shift()!.length;
  } };
  const service = await startService(config, createLogger(config.logLevel, sink));
  return { url: service.url!, opsUrl: service.opsUrl, config, orm: service.orm, brokers: service.kafka.brokers, log: () => kept.join(''), stop: service.close,
    stall(ms) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
      return Promise.resolve();
    },
  };
}

// Under Deno the service logs at warn, so that a failing test shows the child's own last words.
async function childProcess(file: string, databaseUrl: string, overrides: Record<string, string>): Promise<Started> {
  const env = testEnv(file, databaseUrl, {
    KAFKA_BROKERS: (await sharedBrokers()).join(','),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    ...overrides,
  });
  // The child's address must be known before it starts: PORT=0 becomes a free port.
  if (env.PORT === '0') env.PORT = String(await freePort());
  if (env.OPS_PORT === '0') env.OPS_PORT = String(await freePort());
  const config = loadConfig(env);
  // Migrations are applied here first, so the child finds the schema ready.
  const orm = await openDatabase({ databaseUrl, logger: createLogger('silent'), poolSize: 4, secrets: secretBoxOf(config) });
  try {
    const launched = await launchService('deno', env);
    return {
      url: launched.url,
      opsUrl: launched.opsUrl,
      config,
      orm,
      brokers: config.kafkaBrokers ?? [],
      log: () => `${launched.output().stdout}\n${launched.output().stderr}`,
      async stall(ms) {
        launched.child.kill('SIGSTOP');
        await new Promise((done) => setTimeout(done, ms));
        launched.child.kill('SIGCONT');
      },
      async stop() {
        const { code, signal } = await launched.stop();
        await orm.close();
        if (code !== 0) throw new Error(`the deno service did not stop cleanly (${signal ?? code}):\n${launched.output().stderr.slice(-3000)}`);
      },
    };
  } catch (error) {
    await orm.close();
    throw error;
  }
}
