// Starts the real service in-process for a test file: its own database, its own topic prefix.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApiKey } from '../../domain/access/key-store.ts';
import { createCatalog } from '../../domain/access/catalogs.ts';
import { loadConfig } from '../../platform/config/config.ts';
import type { Config } from '../../platform/config/config.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { startService } from '../../app/service.ts';
import type { RunningService } from '../../app/service.ts';
import { allTopicNames } from '../../platform/kafka/topics.ts';
import { freshDatabase } from './database.ts';
import { topicPrefixFor } from './kafka.ts';

export interface TestService {
  url: string;
  config: Config;
  service: RunningService;
  databaseUrl: string;
  /** A new catalog with one key; `scopes` defaults to every scope. */
  newTenant(options?: { scopes?: string[]; tier?: string; name?: string }): Promise<Tenant>;
  close(): Promise<void>;
}

export interface Tenant {
  catalogId: string;
  keyId: string;
  key: string;
}

export const ALL_SCOPES = ['catalog:read', 'catalog:write', 'bulk_import:manage', 'webhooks:manage', 'stock:write'];

let tenantCounter = 0;

export function testEnv(file: string, databaseUrl: string, overrides: Record<string, string> = {}): Record<string, string | undefined> {
  return {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    KAFKA_TOPIC_PREFIX: topicPrefixFor(file),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SIGNING_SECRET: 'test-signing-secret-0123456789abcdef0123456789',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'catalog-test-')),
    ...overrides,
  };
}

export async function startTestService(file: string, overrides: Record<string, string> = {}): Promise<TestService> {
  const databaseUrl = overrides.DATABASE_URL ?? await freshDatabase(file);
  const config = loadConfig(testEnv(file, databaseUrl, overrides));
  const service = await startService(config, createLogger(config.logLevel));
  return {
    url: service.url!,
    config,
    service,
    databaseUrl,
    async newTenant(options = {}) {
      const em = service.orm.em.fork();
      tenantCounter += 1;
      const catalog = await createCatalog(em, {
        name: options.name ?? `tenant-${process.pid}-${tenantCounter}-${Date.now()}`,
        ownerEmail: `owner${tenantCounter}@merchant.example`,
      });
      const issued = await createApiKey(em, {
        catalogId: catalog.id,
        scopes: options.scopes ?? ALL_SCOPES,
        tier: options.tier ?? 'enterprise',
        environment: config.environment,
      });
      return { catalogId: catalog.id, keyId: issued.record.id, key: issued.key };
    },
    async close() {
      // Topics are per file and per run: drop them so the shared broker does not pile them up.
      const topics = allTopicNames(config.kafkaTopicPrefix);
      await service.kafka.withAdmin((admin) => admin.deleteTopics({ topics })).catch(() => undefined);
      await service.close();
    },
  };
}
