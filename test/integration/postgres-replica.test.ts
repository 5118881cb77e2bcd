// A primary and a streaming standby behind one proxy address fail over: nothing acknowledged is lost, cut clients fail at once, new ones reach the promoted standby.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { replicaStatus, stopReplicatedPostgres } from '../../scripts/postgres-replica.ts';
import { eventually } from '../helpers/media.ts';
import { privateReplicatedPostgres } from '../helpers/postgres-replica.ts';
import type { PrivateReplicatedPostgres } from '../helpers/postgres-replica.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import type { TcpProxy } from '../helpers/tcp-proxy.ts';

const WAIT_MS = 30_000;
// Long enough for a loaded machine to answer; a client left waiting on a dead connection would wait forever.
const ANSWER_MS = 5000;

const urlAt = (port: number) => `postgres://postgres@127.0.0.1:${port}/postgres`;
const portOf = (url: string) => Number(new URL(url).port);

/** Rejects when the promise has not settled by then: what "an error, not a hang" means. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => { timer = setTimeout(() => fail(new Error(`${what}: no answer within ${ms} ms`)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** How a query ended: its rows, or the error's message (a hang fails the test). */
const outcomeOf = (client: pg.Client | pg.Pool, sql: string): Promise<string> =>
  within(client.query(sql).then((r) => JSON.stringify(r.rows), (error: Error) => `error: ${error.message}`), ANSWER_MS, sql);

/**
 * Processes of a pair's folder, by `ps`: a postmaster names the folder in its arguments; its
 * children (backends, walsender, checkpointer) work in it.
 */
function processesOf(dataDir: string): string[] {
  // The folder with its separator: another pair's folder may begin with this one's name (`…-failover-sync-node`).
  const inside = `${dataDir}/`;
  const lines = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n').filter((line) => line.trim());
  return lines.filter((line) => {
    if (line.includes(inside)) return true;
    try {
      return `${readlinkSync(`/proc/${line.trim().split(/\s+/)[0]}/cwd`)}/`.startsWith(inside);
    } catch {
      return false;
    }
  });
}

/** Tears a pair down and proves it gone; also the `after` of a test that failed half-way. */
async function removeAll(pair: PrivateReplicatedPostgres, proxy: TcpProxy | undefined, clients: Array<pg.Client | pg.Pool>): Promise<void> {
  for (const client of clients.splice(0)) await client.end().catch(() => undefined);
  await proxy?.close();
  await pair.remove();
  assert.deepEqual(processesOf(pair.dataDir), [], `postgres processes of ${pair.dataDir} left`);
}

/** Rows of a table on a standby; undefined until the standby has replayed the table's creation. */
async function rowsOn(client: pg.Client, table: string): Promise<number | undefined> {
  try {
    return (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]?.n;
  } catch (error) {
    if ((error as { code?: string }).code === '42P01') return undefined;
    throw error;
  }
}

async function connected(url: string, clients: Array<pg.Client | pg.Pool>): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: ANSWER_MS });
  // A cut connection is reported here too; the query that meets it rejects, which is what the tests read.
  client.on('error', () => undefined);
  clients.push(client);
  await client.connect();
  return client;
}

describe('a synchronous pair behind a proxy', () => {
  const pair = privateReplicatedPostgres('failover', { synchronous: true });
  const clients: Array<pg.Client | pg.Pool> = [];
  let proxy: TcpProxy | undefined;
  after(() => removeAll(pair, proxy, clients));

  test('fails over to the standby: every acknowledged row is there and the same address answers writes', async (t) => {
    const began = Date.now();
    const { primaryUrl, standbyUrl } = await pair.start();
    t.diagnostic(`pair started in ${Date.now() - began} ms`);
    assert.equal((await replicaStatus(pair.options)).syncState, 'sync');
    proxy = await startTcpProxy({ port: portOf(primaryUrl) });
    const serviceUrl = urlAt(proxy.port);

    const writer = await connected(serviceUrl, clients);
    await writer.query('CREATE TABLE failover_rows (id int PRIMARY KEY, note text NOT NULL)');
    for (let id = 1; id <= 100; id++) await writer.query('INSERT INTO failover_rows VALUES ($1, $2)', [id, `row ${id}`]);
    const standby = await connected(standbyUrl, clients);
    await eventually(async () => (await rowsOn(standby, 'failover_rows')) === 100 || undefined, 'the 100 rows on the standby', WAIT_MS);
    // With synchronous commit each of these is acknowledged only once the standby has it on
    // disk, so the crash right after the last one cannot lose any.
    for (let id = 101; id <= 150; id++) await writer.query('INSERT INTO failover_rows VALUES ($1, $2)', [id, `row ${id}`]);

    const old = await connected(serviceUrl, clients);
    assert.equal(await outcomeOf(old, 'SELECT 1 AS one'), '[{"one":1}]');
    const pool = new pg.Pool({ connectionString: serviceUrl, max: 2, connectionTimeoutMillis: ANSWER_MS });
    pool.on('error', () => undefined);
    clients.push(pool);
    assert.equal(await outcomeOf(pool, 'SELECT pg_is_in_recovery() AS r'), '[{"r":false}]');

    await pair.stopPrimary('immediate');
    await pair.promote();
    proxy.retarget(portOf(standbyUrl));
    const status = await replicaStatus(pair.options);
    assert.deepEqual([status.primary.role, status.standby.role], ['down', 'primary']);

    const fresh = await connected(serviceUrl, clients);
    assert.equal((await fresh.query('SELECT pg_is_in_recovery() AS r')).rows[0].r, false, 'the proxy address now reaches the promoted standby');
    const { rows: [kept] } = await fresh.query<{ n: number; total: number }>('SELECT count(*)::int AS n, sum(id)::int AS total FROM failover_rows');
    assert.deepEqual(kept, { n: 150, total: 150 * 151 / 2 }, 'every acknowledged row survived the crash');
    await fresh.query('INSERT INTO failover_rows VALUES (151, $1)', ['after the failover']);
    assert.equal((await fresh.query('SELECT note FROM failover_rows WHERE id = 151')).rows[0].note, 'after the failover');

    assert.match(await outcomeOf(old, 'SELECT 1 AS one'), /^error: /, 'a client whose connection was cut gets an error');
    const again = await connected(serviceUrl, clients);
    assert.equal(await outcomeOf(again, 'SELECT count(*)::int AS n FROM failover_rows'), '[{"n":151}]', 'a reconnect works');
    // The service's pool drops the connections that died and opens new ones through the same address.
    assert.equal(await outcomeOf(pool, 'SELECT pg_is_in_recovery() AS r'), '[{"r":false}]');

    await removeAll(pair, proxy, clients);
  });
});

describe('an asynchronous pair', () => {
  const pair = privateReplicatedPostgres('async');
  const clients: Array<pg.Client | pg.Pool> = [];
  let proxy: TcpProxy | undefined;
  after(() => removeAll(pair, proxy, clients));

  test('streams, stops, and starts again from its folder; a retarget cuts what went through the proxy', async (t) => {
    const began = Date.now();
    const { primaryUrl, standbyUrl } = await pair.start();
    t.diagnostic(`pair started in ${Date.now() - began} ms`);
    const status = await replicaStatus(pair.options);
    assert.deepEqual([status.primary.role, status.standby.role, status.syncState], ['primary', 'standby', 'async']);

    proxy = await startTcpProxy({ port: portOf(primaryUrl) });
    const serviceUrl = urlAt(proxy.port);
    const first = await connected(serviceUrl, clients);
    await first.query("CREATE TABLE kept (note text); INSERT INTO kept VALUES ('written on the primary')");
    const standby = await connected(standbyUrl, clients);
    await eventually(async () => (await rowsOn(standby, 'kept')) === 1 || undefined, 'the row on the standby', WAIT_MS);

    // The primary is still up: the cut alone must end the session, or the client would go on writing to it.
    proxy.retarget(portOf(standbyUrl));
    assert.match(await outcomeOf(first, 'SELECT 1'), /^error: /);
    const second = await connected(serviceUrl, clients);
    assert.equal(await outcomeOf(second, 'SELECT pg_is_in_recovery() AS r'), '[{"r":true}]');
    for (const client of clients.splice(0)) await client.end().catch(() => undefined);

    assert.deepEqual((await stopReplicatedPostgres(pair.options)).stopped, ['primary', 'standby']);
    assert.deepEqual(processesOf(pair.dataDir), [], 'nothing of the pair runs after stop');
    const restarted = Date.now();
    await pair.start();
    t.diagnostic(`restarted from its folder in ${Date.now() - restarted} ms`);
    const back = await connected(standbyUrl, clients);
    assert.equal((await back.query('SELECT note FROM kept')).rows[0].note, 'written on the primary');

    await removeAll(pair, proxy, clients);
  });
});
