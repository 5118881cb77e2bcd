// A real, empty database per test file and run: named after the file and the run, dropped at the end of the run, left-overs of dead runs cleaned up.
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import pg from 'pg';
import { parseRunId, runId, RUN_LOCK_SQL } from './test-run.ts';

export const ADMIN_DATABASE_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const PREFIX = 'catalog_test_';
const MAX_NAME = 63; // Postgres identifiers

/** A database of a run whose lock cannot tell whether it is alive is kept this long. */
export const STALE_AFTER_MS = 6 * 3600_000;

/**
 * `test/integration/rate-limit.test.ts` in run `g…` → `catalog_test_g…_rate_limit`: two runs on
 * one machine never share (or drop) each other's databases.
 */
export function databaseNameFor(file: string, id = runId()): string {
  const stem = basename(file).replace(/\.test\.ts$/, '').replace(/[^a-z0-9]+/gi, '_').toLowerCase();
  const head = `${PREFIX}${id}_`;
  if (head.length + stem.length <= MAX_NAME) return `${head}${stem}`;
  // Cut long stems, with a hash of the whole stem so two long names that share a start still differ.
  const tag = createHash('sha256').update(stem).digest('hex').slice(0, 6);
  return `${head}${stem.slice(0, MAX_NAME - head.length - tag.length - 1)}_${tag}`;
}

async function asAdmin<T>(work: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

export async function freshDatabase(file: string): Promise<string> {
  const name = databaseNameFor(file);
  await asAdmin(async (admin) => {
    // Only this run's own name: a file started twice in one run gets an empty database again.
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${name}"`);
  });
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops one database given its URL (a file's own, at its end). */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  if (!name.startsWith(PREFIX)) throw new Error(`not a test database: ${name}`);
  await asAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

const testDatabases = async (admin: pg.Client): Promise<string[]> =>
  (await admin.query(`SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname`, [PREFIX])).rows.map((r) => r.datname as string);

/** Drops every database of a run (the global teardown, for its own run). */
export async function dropRunDatabases(id: string): Promise<string[]> {
  return asAdmin(async (admin) => {
    const names = (await testDatabases(admin)).filter((name) => name.startsWith(`${PREFIX}${id}_`));
    for (const name of names) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    return names;
  });
}

/**
 * Drops test databases that no live run can be using, and never one that a live run could:
 * - a database of a run made by a global setup whose lock is free (the run is gone), or of any
 *   run (or a name without a run id) older than STALE_AFTER_MS;
 * - and only when nobody is connected to it: a plain DROP DATABASE refuses a database in use,
 *   so a run that is alive after all (its lock session lost) keeps what it is working in.
 */
export async function dropStaleDatabases(ownRunId: string, now = Date.now()): Promise<string[]> {
  return asAdmin(async (admin) => {
    const dropped: string[] = [];
    for (const name of await testDatabases(admin)) {
      const id = /^catalog_test_([a-z0-9]+)_/.exec(name)?.[1];
      if (id === ownRunId) continue;
      const run = id === undefined ? undefined : parseRunId(id);
      let stale = run !== undefined && now - run.startedAt > STALE_AFTER_MS;
      if (!stale && run === undefined) stale = await olderThan(admin, name, now - STALE_AFTER_MS);
      let locked = false;
      if (!stale && run?.locked) {
        locked = (await admin.query(RUN_LOCK_SQL.take, [id])).rows[0].taken as boolean;
        stale = locked;
      }
      try {
        if (stale) {
          await admin.query(`DROP DATABASE IF EXISTS "${name}"`);
          dropped.push(name);
        }
      } catch {
        // In use: left alone.
      } finally {
        if (locked) await admin.query(RUN_LOCK_SQL.release, [id]);
      }
    }
    return dropped;
  });
}

/** A database's age from its folder (superusers only); false when that cannot be read. */
async function olderThan(admin: pg.Client, name: string, before: number): Promise<boolean> {
  try {
    const { rows } = await admin.query(
      `SELECT (pg_stat_file('base/' || oid || '/PG_VERSION')).modification AS created FROM pg_database WHERE datname = $1`, [name]);
    return rows.length === 1 && (rows[0].created as Date).getTime() < before;
  } catch {
    return false;
  }
}

/** A plain client for assertions on rows; closed by the caller. */
export async function sqlClient(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  return client;
}
