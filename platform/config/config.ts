// Reads and validates the environment once into a frozen, typed configuration (docs/configuration.md lists every variable).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError, baseUrl, bool, brokerList, int, oneOf, originList } from './parse.ts';
import type { Env } from './parse.ts';
import { readReplicaConfig } from './database-read.ts';
import type { ReadReplicaConfig } from './database-read.ts';
import { secretsKeyConfig } from './secrets-key.ts';
import type { SecretsKeyConfig } from './secrets-key.ts';

export { ConfigError };
export type { ReadReplicaConfig, SecretsKeyConfig };

export type Role = 'api' | 'consumers' | 'all';
/** The deployment this service is (spec, "Versioning"): its keys are `cat_live_…` or `cat_test_…`. */
export type Environment = 'production' | 'staging';

/** Keys say which deployment they belong to (DESIGN: `cat_<env>_<random>`). */
export const KEY_PREFIXES: Readonly<Record<Environment, string>> = { production: 'cat_live_', staging: 'cat_test_' };

/** The deployment a key was made for, by its prefix; undefined for anything else. */
export function keyEnvironment(token: string): Environment | undefined {
  return (Object.entries(KEY_PREFIXES) as Array<[Environment, string]>).find(([, prefix]) => token.startsWith(prefix))?.[0];
}
export type StorageDriver = 'local' | 's3';

export interface S3Config {
  readonly endpoint: string | undefined;
  /** Where clients reach the store, when not at `endpoint` (a store on a container network): presigned addresses use it. */
  readonly publicEndpoint: string | undefined;
  readonly bucket: string;
  readonly region: string;
  readonly accessKeyId: string | undefined;
  readonly secretAccessKey: string | undefined;
}

export interface Config {
  readonly port: number;
  readonly host: string;
  /** OPS_PORT and OPS_HOST: the operations listener (/metrics, /healthz, /readyz), every role. */
  readonly opsPort: number;
  readonly opsHost: string;
  readonly publicBaseUrl: string;
  readonly role: Role;
  readonly databaseUrl: string;
  /** DATABASE_READ_*: the streaming standby the contract's lag-tolerant reads go to; undefined: every read on the primary. */
  readonly databaseRead: ReadReplicaConfig | undefined;
  /** Comma list from KAFKA_BROKERS; undefined means "start the local broker". */
  readonly kafkaBrokers: readonly string[] | undefined;
  readonly kafkaTopicPrefix: string;
  /** KAFKA_PUBLIC_BROKERS: the brokers readers reach, named in the served AsyncAPI document; undefined: the service's own. */
  readonly kafkaPublicBrokers: readonly string[] | undefined;
  /** How the service's topics are created and kept (docs/design.md, "Kafka topics"). */
  readonly kafkaTopics: KafkaTopicsConfig;
  readonly storageDriver: StorageDriver;
  readonly storageDir: string;
  readonly s3: S3Config;
  readonly signingSecret: string;
  /** True when SIGNING_SECRET was not given and the secret was generated into the data folder (one machine only). */
  readonly signingSecretGenerated: boolean;
  /** SECRETS_KEY (or SECRETS_KEY_FILE) and SECRETS_OLD_KEYS: what seals webhook secrets and import headers at rest. */
  readonly secretsKey: SecretsKeyConfig;
  readonly webhookRetryDelaysMs: readonly number[];
  readonly webhookTimeoutMs: number;
  readonly webhookDisableAfter: number;
  readonly webhookAllowHttp: boolean;
  /** How long GET /events keeps a published event readable (sent work messages go after a day). */
  readonly eventRetentionDays: number;
  /** ITEM_VERSION_RETENTION_DAYS: how long an item's versions are kept (and restorable). */
  readonly itemVersionRetentionDays: number;
  /** AUDIT_LOG_RETENTION_DAYS: how long the audit log keeps an entry. */
  readonly auditLogRetentionDays: number;
  readonly outboundAllowPrivate: boolean;
  /** Media ingestion (docs/media.md). */
  readonly media: MediaConfig;
  /** How much work and how many database connections one process takes (docs/operations.md, "Scaling out"). */
  readonly capacity: CapacityConfig;
  /** CATALOG_ENVIRONMENT: production (keys `cat_live_…`) or staging (keys `cat_test_…`). */
  readonly environment: Environment;
  /** OTHER_ENVIRONMENT_URL: the other deployment's base address, listed in the served contract. */
  readonly otherEnvironmentUrl: string | undefined;
  /** CORS_ALLOWED_ORIGINS: browser origins that may call the API (`*` for any); empty: CORS off. */
  readonly corsAllowedOrigins: readonly string[];
  /** CONSOLE_FRAME_ANCESTORS: origins whose pages may embed the console in a frame; empty: none may. */
  readonly consoleFrameAncestors: readonly string[];
  /** TRUST_PROXY_HOPS: proxies of the deployment's own in front; 0: X-Forwarded-For is ignored (platform/http/client-address.ts). */
  readonly trustProxyHops: number;
  readonly smtpUrl: string | undefined;
  readonly mailFrom: string;
  readonly logLevel: string;
  /** Folder for local state: generated secrets, local mail, the local Kafka broker. */
  readonly dataDir: string;
}

export interface KafkaTopicsConfig {
  /** KAFKA_PARTITIONS: partitions of a topic the service creates; fixed for the topic's life. */
  readonly partitions: number;
  /** KAFKA_REPLICATION_FACTOR: replicas of a topic the service creates; -1: the cluster's default.replication.factor. */
  readonly replicationFactor: number;
  /** CHANGELOG_TOMBSTONE_RETENTION_DAYS: how long a deleted item's tombstone stays on the changelog (delete.retention.ms). */
  readonly tombstoneRetentionDays: number;
  /** CHANGELOG_MIN_COMPACTION_LAG_HOURS: how long every changelog record stays before compaction may drop it (min.compaction.lag.ms). */
  readonly minCompactionLagHours: number;
}

export interface CapacityConfig {
  /** API_DATABASE_CONNECTIONS: the pool's connections for serving requests. */
  readonly apiConnections: number;
  /** API_DATABASE_READ_CONNECTIONS: the read replica's pool, in processes that serve requests, when DATABASE_READ_URL is set. */
  readonly apiReadConnections: number;
  /** CONSUMERS_DATABASE_CONNECTIONS: the pool's connections for the relay, webhooks, media and imports. */
  readonly consumerConnections: number;
  /** IMPORT_JOBS_PER_PROCESS: import jobs one consumers process runs at once; others wait for a process with room. */
  readonly importJobs: number;
}

export interface MediaConfig {
  /** MEDIA_REFRESH_AGE_HOURS: a known asset is checked again (HEAD + If-None-Match) when a changed item names it after this long. */
  readonly refreshAgeHours: number;
  /** MEDIA_TIMEOUT_MS: per download attempt, headers and body. */
  readonly timeoutMs: number;
  /** MEDIA_RETRIES: retries after the first attempt, for timeouts, network errors and 408/429/5xx. */
  readonly retries: number;
  /** MEDIA_CONCURRENCY: images in flight per consumer process (downloading, or being worked on). */
  readonly concurrency: number;
  /** MEDIA_CONCURRENCY_WHILE_IMPORTING: the same while the process runs an import job, which then gets the CPU first. */
  readonly concurrencyWhileImporting: number;
  /** MEDIA_ALLOWED_HOSTS: `host[:port]` entries the network guard lets through (an internal CDN). */
  readonly allowedHosts: readonly string[];
  /** MEDIA_HOST_CONCURRENCY: downloads in flight to one host per consumer process. */
  readonly hostConcurrency: number;
  /** MEDIA_RENDITIONS: the WebP renditions made of every image; empty turns them off. */
  readonly renditions: readonly RenditionSpec[];
  /** MEDIA_URL_TTL_SECONDS: the least time a stored image's address stays valid. */
  readonly urlTtlSeconds: number;
}

/** A rendition: the image scaled to fit inside `size` × `size` pixels (never enlarged). */
export interface RenditionSpec {
  readonly name: string;
  readonly size: number;
}

// Signed addresses stay the same for an hour (cacheable) and valid for the TTL beyond it; S3's
// presigned addresses live at most 7 days, so the TTL can be up to 7 days less that hour.
export const MAX_MEDIA_URL_TTL_SECONDS = 7 * 24 * 3600 - 3600;

function renditions(env: Env): readonly RenditionSpec[] {
  const raw = env.MEDIA_RENDITIONS ?? 'thumb:200,medium:800';
  const specs = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '').map((entry) => {
    const match = /^([a-z][a-z0-9_-]{0,31}):(\d{1,4})$/.exec(entry);
    const size = Number(match?.[2]);
    if (!match || size < 16 || size > 4096) {
      throw new ConfigError(`MEDIA_RENDITIONS must be a comma list of name:pixels (a lower-case name, 16 to 4096 pixels), got "${raw}"`);
    }
    return Object.freeze({ name: match[1]!, size });
  });
  if (new Set(specs.map((spec) => spec.name)).size !== specs.length) throw new ConfigError(`MEDIA_RENDITIONS names a rendition twice: "${raw}"`);
  return Object.freeze(specs);
}

/**
 * The consumers' pool holds the relay 1, the webhook dispatcher 2, the fan-out 3, disable notices
 * 1, media about 4, and about 2 for each running import job (its batch and the read ahead's
 * lookup); LISTEN and each job's lock use connections of their own, outside the pool.
 */
function capacity(env: Env): CapacityConfig {
  const importJobs = int(env, 'IMPORT_JOBS_PER_PROCESS', 3, 1, 64);
  return Object.freeze({
    apiConnections: int(env, 'API_DATABASE_CONNECTIONS', 20, 2, 1000),
    apiReadConnections: int(env, 'API_DATABASE_READ_CONNECTIONS', 10, 1, 1000),
    consumerConnections: int(env, 'CONSUMERS_DATABASE_CONNECTIONS', 10 + 2 * importJobs, 4, 1000),
    importJobs,
  });
}

/** -1 (the cluster's default) or a replica count. */
function replicationFactor(env: Env): number {
  const factor = int(env, 'KAFKA_REPLICATION_FACTOR', -1, -1, 32_767);
  if (factor === 0) throw new ConfigError('KAFKA_REPLICATION_FACTOR must be -1 (the cluster\'s default) or at least 1, got "0"');
  return factor;
}

const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
const DEFAULT_RETRY_DELAYS = '0,5000,25000,120000,600000,1800000,7200000,21600000';

function retryDelays(raw: string): number[] {
  const delays = raw.split(',').map((part) => Number(part.trim()));
  // The spec fixes 8 delivery attempts; the delays before each are configuration.
  if (delays.length !== 8 || delays.some((d) => !Number.isInteger(d) || d < 0)) {
    throw new ConfigError(`WEBHOOK_RETRY_DELAYS_MS must list 8 non-negative integers, got "${raw}"`);
  }
  return delays;
}

/**
 * What a second machine would need that this configuration does not give (docs/operations.md,
 * "Scaling out"): empty when the process can run beside others anywhere.
 */
export function singleMachineSettings(config: Config): string[] {
  const needs: string[] = [];
  // Only the local driver signs its own upload addresses; S3 presigns them.
  if (config.storageDriver === 'local') {
    needs.push(`shared storage (STORAGE_DRIVER=s3, or ${config.storageDir} mounted on every machine)`);
    if (config.signingSecretGenerated) needs.push(`the same SIGNING_SECRET on every machine (this one uses the secret generated into ${config.dataDir})`);
  }
  // Every process opens what any other sealed.
  if (config.secretsKey.from === 'generated') needs.push(`the same SECRETS_KEY on every machine (this one uses the key generated into ${config.dataDir})`);
  return needs;
}

/** Reads SIGNING_SECRET, or the one generated once into the data folder. */
function signingSecret(env: Env, dataDir: string): string {
  const given = env.SIGNING_SECRET;
  if (given !== undefined && given !== '') {
    if (given.length < 32) throw new ConfigError('SIGNING_SECRET must be at least 32 characters');
    return given;
  }
  const file = resolve(dataDir, 'signing-secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dirname(file), { recursive: true });
  const secret = randomBytes(32).toString('hex');
  writeFileSync(file, secret, { mode: 0o600, flag: 'wx' });
  return secret;
}

export function loadConfig(env: Env = process.env): Config {
  const port = int(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const dataDir = resolve(env.DATA_DIR || './.data');
  const brokers = brokerList(env, 'KAFKA_BROKERS');
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.has(logLevel)) throw new ConfigError(`LOG_LEVEL must be a pino level, got "${logLevel}"`);
  const config: Config = {
    port,
    host,
    opsPort: int(env, 'OPS_PORT', 9464, 0, 65535),
    opsHost: env.OPS_HOST || '127.0.0.1',
    publicBaseUrl: (env.PUBLIC_BASE_URL || `http://${host}:${port}`).replace(/\/+$/, ''),
    role: oneOf(env, 'ROLE', 'all', ['api', 'consumers', 'all'] as const),
    databaseUrl: env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/catalog',
    databaseRead: readReplicaConfig(env),
    kafkaBrokers: brokers,
    kafkaTopicPrefix: env.KAFKA_TOPIC_PREFIX ?? '',
    kafkaPublicBrokers: brokerList(env, 'KAFKA_PUBLIC_BROKERS') ?? brokers,
    kafkaTopics: Object.freeze({
      partitions: int(env, 'KAFKA_PARTITIONS', 12, 1, 10_000),
      replicationFactor: replicationFactor(env),
      // A mirror that is away longer than this misses deletes (docs/design.md, "Kafka topics").
      tombstoneRetentionDays: int(env, 'CHANGELOG_TOMBSTONE_RETENTION_DAYS', 7, 7, 3650),
      minCompactionLagHours: int(env, 'CHANGELOG_MIN_COMPACTION_LAG_HOURS', 24, 0, 24 * 3650),
    }),
    storageDriver: oneOf(env, 'STORAGE_DRIVER', 'local', ['local', 's3'] as const),
    storageDir: resolve(env.STORAGE_DIR || './.data/storage'),
    s3: Object.freeze({
      endpoint: env.S3_ENDPOINT || undefined,
      publicEndpoint: env.S3_PUBLIC_ENDPOINT || env.S3_ENDPOINT || undefined,
      bucket: env.S3_BUCKET || 'catalog-imports',
      region: env.S3_REGION || 'us-east-1',
      accessKeyId: env.S3_ACCESS_KEY_ID || env.AWS_ACCESS_KEY_ID || undefined,
      secretAccessKey: env.S3_SECRET_ACCESS_KEY || env.AWS_SECRET_ACCESS_KEY || undefined,
    }),
    signingSecret: signingSecret(env, dataDir),
    signingSecretGenerated: !env.SIGNING_SECRET,
    secretsKey: secretsKeyConfig(env, dataDir),
    webhookRetryDelaysMs: Object.freeze(retryDelays(env.WEBHOOK_RETRY_DELAYS_MS || DEFAULT_RETRY_DELAYS)),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 5000, 1, 600_000),
    webhookDisableAfter: int(env, 'WEBHOOK_DISABLE_AFTER', 20, 1, 1_000_000),
    webhookAllowHttp: bool(env, 'WEBHOOK_ALLOW_HTTP', false),
    eventRetentionDays: int(env, 'EVENT_RETENTION_DAYS', 30, 1, 3650),
    itemVersionRetentionDays: int(env, 'ITEM_VERSION_RETENTION_DAYS', 90, 1, 3650),
    auditLogRetentionDays: int(env, 'AUDIT_LOG_RETENTION_DAYS', 365, 1, 3650),
    outboundAllowPrivate: bool(env, 'OUTBOUND_ALLOW_PRIVATE', false),
    media: Object.freeze({
      refreshAgeHours: int(env, 'MEDIA_REFRESH_AGE_HOURS', 24, 0, 24 * 365),
      timeoutMs: int(env, 'MEDIA_TIMEOUT_MS', 15_000, 1, 600_000),
      retries: int(env, 'MEDIA_RETRIES', 2, 0, 10),
      concurrency: int(env, 'MEDIA_CONCURRENCY', 32, 1, 256),
      concurrencyWhileImporting: int(env, 'MEDIA_CONCURRENCY_WHILE_IMPORTING', 2, 1, 256),
      allowedHosts: Object.freeze((env.MEDIA_ALLOWED_HOSTS ?? '').split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== '')),
      hostConcurrency: int(env, 'MEDIA_HOST_CONCURRENCY', 4, 1, 256),
      renditions: renditions(env),
      urlTtlSeconds: int(env, 'MEDIA_URL_TTL_SECONDS', 86_400, 60, MAX_MEDIA_URL_TTL_SECONDS),
    }),
    capacity: capacity(env),
    environment: oneOf(env, 'CATALOG_ENVIRONMENT', 'production', ['production', 'staging'] as const),
    otherEnvironmentUrl: baseUrl(env, 'OTHER_ENVIRONMENT_URL'),
    corsAllowedOrigins: originList(env, 'CORS_ALLOWED_ORIGINS', { anyOrigin: true }),
    // The merchant platform's dashboard origins that may frame the console (CSP frame-ancestors).
    consoleFrameAncestors: originList(env, 'CONSOLE_FRAME_ANCESTORS', { anyOrigin: false }),
    trustProxyHops: int(env, 'TRUST_PROXY_HOPS', 0, 0, 10),
    smtpUrl: env.SMTP_URL || undefined,
    mailFrom: env.MAIL_FROM || 'Catalog Service <no-reply@catalog.localhost>',
    logLevel,
    dataDir,
  };
  return Object.freeze(config);
}
