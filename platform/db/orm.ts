// Opens the database: creates it if missing, applies pending migrations, hands out the ORM.
import { MikroORM } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { ConfigError } from '../config/config.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import type { Logger } from '../log/logger.ts';
import { entities } from './entities/index.ts';
import { migrationsFor } from './migrations/index.ts';
import { openSession, releaseLostClients } from './connections.ts';
import { PreparingClient } from './sql.ts';
import { hasSqlState } from './pg-errors.ts';

export type Orm = MikroORM;

// Any fixed number: every instance takes the same advisory lock while migrating.
const MIGRATION_LOCK = 7_214_001;

/** A database URL fit to show: its password, if any, replaced by `***`. */
export function shownDatabaseUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  if (url.password !== '') url.password = '***';
  return url.toString();
}

/**
 * Creates the database named in the URL when it does not exist yet; with `create: false` (the
 * operator's commands, which must act on the service's database, not a new empty one) that is a
 * ConfigError naming the database and where it was looked for.
 */
export async function ensureDatabase(databaseUrl: string, logger: Logger, create = true): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (name === '') throw new Error('DATABASE_URL must name a database');
  try {
    await (await openSession(databaseUrl, logger, 'database probe')).close();
    return;
  } catch (error) {
    if (!hasSqlState(error, 'invalid_catalog_name')) throw error; // the database does not exist
  }
  if (!create) {
    throw new ConfigError(`the database "${name}" does not exist on ${url.host} (DATABASE_URL ${shownDatabaseUrl(databaseUrl)}). The service creates `
      + 'it when it first starts: run this with the DATABASE_URL the service uses, or start the service once.');
  }
  url.pathname = '/postgres';
  const admin = await openSession(url.toString(), logger, 'database creation');
  try {
    await admin.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
  } catch (error) {
    // Another instance created it first.
    if (!hasSqlState(error, 'duplicate_database')) throw error;
  } finally {
    await admin.close();
  }
}

export interface OpenDatabaseOptions {
  databaseUrl: string;
  logger: Logger;
  /** Apply pending migrations (the default); `false` only for tools that must not change the schema. */
  migrate?: boolean;
  /**
   * The key of the values sealed at rest: a migration that seals values already stored needs it
   * (without it, such a migration refuses a database that holds any). Also for `migrate()` later.
   */
  secrets?: SecretBox;
  /** Create the database when it is missing (the default); `false` makes that an error. */
  create?: boolean;
  /**
   * Look for the database before opening (the default). `false` opens the pool without a
   * connection: a read replica that is down must not keep the service from starting, and its own
   * checks say whether it answers.
   */
  probe?: boolean;
  poolSize?: number;
  /** Bounds opening a new pooled connection (not waiting for a free one); unbounded by default. */
  connectTimeoutMs?: number;
}

/** The pool's client class: a statement waits at most `connectTimeoutMs` for a new connection to open. */
function clientClass(connectTimeoutMs: number | undefined): typeof PreparingClient {
  if (connectTimeoutMs === undefined) return PreparingClient;
  return class extends PreparingClient {
    constructor(config: ConstructorParameters<typeof PreparingClient>[0]) {
      super({ ...(typeof config === 'string' ? { connectionString: config } : config), connectionTimeoutMillis: connectTimeoutMs });
    }
  };
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Orm> {
  if (options.probe !== false) await ensureDatabase(options.databaseUrl, options.logger, options.create ?? true);
  const orm = await MikroORM.init({
    clientUrl: options.databaseUrl,
    entities,
    extensions: [Migrator],
    ensureDatabase: false,
    pool: { min: 0, max: options.poolSize ?? 10 },
    // MikroORM listens for its clients' errors; a client that dies while checked out must also
    // give its slot back (see releaseLostClients).
    driverOptions: { Client: clientClass(options.connectTimeoutMs), onPoolCreated: releaseLostClients },
    migrations: { migrationsList: migrationsFor(options.secrets), transactional: true, allOrNothing: true, snapshot: false, silent: true },
    debug: false,
  });
  if (options.migrate !== false) await migrate(orm, options.databaseUrl, options.logger);
  return orm;
}

/** Applies pending migrations under an advisory lock, so instances starting together take turns. */
export async function migrate(orm: Orm, databaseUrl: string, logger: Logger): Promise<string[]> {
  // Session-level: the migrator runs its own transactions, and the lock must span all of them.
  const lock = await openSession(databaseUrl, logger, 'migration lock');
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await orm.migrator.up();
    const names = applied.map((m) => m.name);
    if (names.length > 0) logger.info({ migrations: names }, 'applied database migrations');
    return names;
  } finally {
    await lock.close();
  }
}
