// The id of one test run (databases, topic prefixes and data folders carry it) and the Postgres advisory lock that tells other runs it is alive.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * `g…` ids are made by the global setup, which holds the run's lock for the whole run; `p…` ids
 * by a process run without it (one file run alone, a benchmark), which holds no lock. Then the
 * start time in base36 (8 characters until 2059) and 4 random characters: 13 in all.
 */
const RUN_ID = /^([gp])([0-9a-z]{8})[0-9a-z]{4}$/;

export function newRunId(kind: 'g' | 'p'): string {
  return `${kind}${Date.now().toString(36).padStart(8, '0')}${randomBytes(3).readUIntBE(0, 3).toString(36).padStart(4, '0').slice(-4)}`;
}

/** This run's id: the global setup's (TEST_RUN_ID), or one made once for this process. */
export function runId(): string {
  process.env.TEST_RUN_ID ??= newRunId('p');
  return process.env.TEST_RUN_ID;
}

/** What a run id says about its run; undefined for ids of another shape (set by hand). */
export function parseRunId(id: string): { locked: boolean; startedAt: number } | undefined {
  const match = RUN_ID.exec(id);
  return match ? { locked: match[1] === 'g', startedAt: parseInt(match[2]!, 36) } : undefined;
}

// Advisory lock keys: a class of our own ("cat1") and the run id's hash.
const LOCK_CLASS = 0x63617431;
export const RUN_LOCK_SQL = { take: `SELECT pg_try_advisory_lock(${LOCK_CLASS}, hashtext($1)) AS taken`, release: `SELECT pg_advisory_unlock(${LOCK_CLASS}, hashtext($1))` };

export interface RunLock {
  release(): Promise<void>;
}

/**
 * Holds the run's lock on a session of its own until release(). The session is the run's sign
 * of life for other runs' clean-up, so if the server drops it (a test terminating backends) it
 * is opened again and the lock taken again; an error never escapes to crash the test runner.
 */
export async function holdRunLock(adminUrl: string, id: string): Promise<RunLock> {
  let client: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let released = false;
  const schedule = (ms: number) => {
    if (released || timer) return;
    timer = setTimeout(() => { timer = undefined; open().catch(() => schedule(1000)); }, ms);
  };
  const open = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: adminUrl, application_name: `catalog-test-run ${id}` });
    next.on('error', () => undefined);
    next.on('end', () => { if (client === next) { client = undefined; schedule(200); } });
    client = next;
    await next.connect();
    const { rows } = await next.query(RUN_LOCK_SQL.take, [id]);
    if (rows[0].taken) return;
    client = undefined;
    await next.end();
    throw new Error(`test run ${id}: its lock is held by another session`);
  };
  const release = async () => {
    released = true;
    clearTimeout(timer);
    const last = client;
    client = undefined;
    await last?.end().catch(() => undefined);
  };
  try {
    await open();
  } catch (error) {
    await release();
    throw error;
  }
  return { release };
}
