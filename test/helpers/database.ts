// A real, empty database per test file, named after the file, created fresh on every run.
import { basename } from 'node:path';
import pg from 'pg';

export const ADMIN_DATABASE_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** `test/integration/rate-limit.test.ts` → `catalog_test_rate_limit`. */
export function databaseNameFor(file: string): string {
  const stem = basename(file).replace(/\.test\.ts$/, '').replace(/[^a-z0-9]+/gi, '_').toLowerCase();
  return `catalog_test_${stem}`.slice(0, 63);
}

export async function freshDatabase(file: string): Promise<string> {
  const name = databaseNameFor(file);
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A plain client for assertions on rows; closed by the caller. */
export async function sqlClient(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  return client;
}
