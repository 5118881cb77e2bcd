// The benchmarks' own databases: created fresh for each run, dropped after it.
import pg from 'pg';

async function asAdmin(adminUrl: string, statements: readonly string[]): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (const statement of statements) await admin.query(statement);
  } finally {
    await admin.end();
  }
}

/** Drops and creates database `name`, with `settings` (`synchronous_commit = off`) for its sessions; returns its URL. */
export async function freshBenchDatabase(adminUrl: string, name: string, settings: readonly string[] = []): Promise<string> {
  await asAdmin(adminUrl, [
    `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`, `CREATE DATABASE ${name}`, ...settings.map((setting) => `ALTER DATABASE ${name} SET ${setting}`),
  ]);
  return Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();
}

export const dropBenchDatabase = (adminUrl: string, name: string) => asAdmin(adminUrl, [`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]);
