// The suite's own isolation: databases named per run, and the clean-up that drops a dead run's databases but never a live run's.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import pg from 'pg';
import { ADMIN_DATABASE_URL, STALE_AFTER_MS, databaseNameFor, dropRunDatabases, dropStaleDatabases } from '../helpers/database.ts';
import { holdRunLock, newRunId } from '../helpers/test-run.ts';

const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
await admin.connect();
const created: string[] = [];

async function create(id: string, stem = 'isolation'): Promise<string> {
  const name = databaseNameFor(`${stem}.test.ts`, id);
  await admin.query(`CREATE DATABASE "${name}"`);
  created.push(name);
  return name;
}
const exists = async (name: string) => (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;

after(async () => {
  for (const name of created) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.end();
});

test('two runs never share a database name; names fit in 63 characters and long ones stay distinct', () => {
  const [a, b] = [newRunId('g'), newRunId('g')];
  assert.notEqual(databaseNameFor('test/integration/media.test.ts', a), databaseNameFor('test/integration/media.test.ts', b));
  const long = (tail: string) => databaseNameFor(`test/integration/${'a-very-long-test-file-name-'.repeat(3)}${tail}.test.ts`, a);
  assert.ok(long('one').length <= 63 && long('two').length <= 63);
  assert.notEqual(long('one'), long('two'));
});

test('clean-up drops the databases of dead runs and old left-overs, never a live run\'s or one in use', async () => {
  // Both hold their locks as real runs do: other runs' clean-up, running meanwhile, sees them alive.
  const own = newRunId('g');
  const live = newRunId('g');
  const ownLock = await holdRunLock(ADMIN_DATABASE_URL, own);
  const lock = await holdRunLock(ADMIN_DATABASE_URL, live);
  const oldProcessRun = `p${(Date.now() - STALE_AFTER_MS - 60_000).toString(36)}abcd`;
  const dead = { run: await create(newRunId('g')), old: await create(oldProcessRun) };
  // A dead run's database someone is still connected to (its lock is held only until the connection is made).
  const gone = newRunId('g');
  const goneLock = await holdRunLock(ADMIN_DATABASE_URL, gone);
  const kept = { own: await create(own), live: await create(live), recentProcessRun: await create(newRunId('p')), inUse: await create(gone) };
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${kept.inUse}`;
  const user = new pg.Client({ connectionString: url.toString() });
  await user.connect();
  await goneLock.release();
  try {
    // Gone, by this clean-up or by another run's at the same time (which may make this one pass a lock by).
    for (let i = 0; i < 5 && ((await exists(dead.run)) || (await exists(dead.old))); i++) await dropStaleDatabases(own);
    for (const [what, name] of Object.entries(dead)) assert.equal(await exists(name), false, `${what}: ${name} still there`);
    for (const [what, name] of Object.entries(kept)) assert.equal(await exists(name), true, `${what}: ${name} was dropped`);
    await user.end();
    await lock.release();
    // Once the live run ends its lock is free: a clean-up takes its databases (another run's
    // clean-up checking the same lock at that moment makes this one pass it by: so, a few).
    for (let i = 0; i < 5 && (await exists(kept.live)); i++) await dropStaleDatabases(own);
    assert.equal(await exists(kept.live), false, 'a dead run\'s database is left');
    assert.deepEqual(await dropRunDatabases(own), [kept.own]);
  } finally {
    await user.end().catch(() => undefined);
    await lock.release();
    await ownLock.release();
  }
});
