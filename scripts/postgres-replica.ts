// Starts, stops, fails over and reports a private Postgres primary with a streaming standby, run from Debian's binaries (dev and failover tests).
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { portOpen } from './kafka/process.ts';
import { defaultBinDir, giveToPostgres, query, runAsPostgres, serverPid, startServer, stopServer, until, urlOf } from './postgres-replica/server.ts';
import type { Server } from './postgres-replica/server.ts';
import type { Logger } from '../platform/log/logger.ts';

const DEFAULT_PRIMARY_PORT = 5441;
const DEFAULT_STANDBY_PORT = 5442;
const READY_TIMEOUT_MS = 60_000;
// The standby's application_name: what synchronous_standby_names names and pg_stat_replication shows.
const STANDBY_NAME = 'standby';

export interface ReplicaOptions {
  /** The pair's own folder: `primary/`, `standby/`, their logs and sockets live in it. */
  readonly dataDir: string;
  readonly primaryPort: number;
  readonly standbyPort: number;
  /** A commit on the primary returns once the standby has it on disk. */
  readonly synchronous?: boolean;
  readonly logger?: Logger;
  /** Where initdb, pg_ctl and pg_basebackup are; Debian's PostgreSQL 15 folder by default. */
  readonly binDir?: string;
}

export interface ReplicaUrls {
  readonly primaryUrl: string;
  readonly standbyUrl: string;
}

export interface ReplicaStatus extends ReplicaUrls {
  readonly primary: NodeStatus;
  readonly standby: NodeStatus;
  /** pg_stat_replication's view of the standby on the primary (undefined when not streaming). */
  readonly syncState: string | undefined;
  /** WAL bytes written on the primary and not yet replayed on the standby. */
  readonly lagBytes: number | undefined;
}

export interface NodeStatus {
  readonly pid: number | undefined;
  /** `primary` answers writes, `standby` is in recovery; `down` when it does not answer. */
  readonly role: 'primary' | 'standby' | 'down';
}

interface Pair { root: string; primary: Server; standby: Server; settingsFile: string }

function pairOf(opts: ReplicaOptions): Pair {
  const root = resolve(opts.dataDir);
  const binDir = opts.binDir ?? defaultBinDir();
  const socketDir = join(root, 'sockets');
  const server = (name: 'primary' | 'standby', port: number): Server =>
    ({ name, dir: join(root, name), port, logFile: join(root, `${name}.log`), socketDir, binDir });
  return { root, primary: server('primary', opts.primaryPort), standby: server('standby', opts.standbyPort), settingsFile: join(root, 'pair.json') };
}

export const urlsOf = (opts: ReplicaOptions): ReplicaUrls => ({ primaryUrl: urlOf(opts.primaryPort), standbyUrl: urlOf(opts.standbyPort) });

/** The standby's primary_conninfo names the primary's port, so a folder keeps the ports it was made with. */
function checkPorts(pair: Pair, opts: ReplicaOptions): void {
  for (const port of [opts.primaryPort, opts.standbyPort]) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`not a port number: ${port}`);
  }
  if (opts.primaryPort === opts.standbyPort) throw new Error('the primary and the standby need two different ports');
  if (!existsSync(pair.settingsFile)) return;
  const made = JSON.parse(readFileSync(pair.settingsFile, 'utf8')) as { primaryPort: number; standbyPort: number };
  if (made.primaryPort !== opts.primaryPort || made.standbyPort !== opts.standbyPort) {
    throw new Error(`${pair.root} was made for ports ${made.primaryPort} and ${made.standbyPort}; start it with those, or remove it`);
  }
}

async function ensurePortFree(server: Server): Promise<void> {
  if (serverPid(server) === undefined && (await portOpen(server.port))) {
    throw new Error(`port ${server.port} for the ${server.name} is taken by another process`);
  }
}

async function initPrimary(pair: Pair, logger?: Logger): Promise<void> {
  const { primary } = pair;
  rmSync(primary.dir, { recursive: true, force: true });
  // --no-sync (here and in the clone): a folder half-written when the machine dies is made again, not repaired.
  await runAsPostgres(primary.binDir, 'initdb', ['-D', primary.dir, '-U', 'postgres', '--auth=trust', '--no-instructions', '--no-sync']);
  writeFileSync(join(primary.dir, 'pg_hba.conf'), 'host replication all 127.0.0.1/32 trust\n', { flag: 'a' });
  // Appended after initdb's defaults, so these win; the port and socket folder come from pg_ctl -o.
  writeFileSync(join(primary.dir, 'postgresql.conf'), [
    '', '# scripts/postgres-replica.ts',
    "listen_addresses = '127.0.0.1'", 'max_connections = 100', 'shared_buffers = 16MB',
    'wal_level = replica', 'max_wal_senders = 5', 'max_replication_slots = 5', 'hot_standby = on', '',
  ].join('\n'), { flag: 'a' });
  logger?.info({ dir: primary.dir }, 'initialised the primary');
}

async function cloneStandby(pair: Pair, logger?: Logger): Promise<void> {
  const { primary, standby } = pair;
  rmSync(standby.dir, { recursive: true, force: true });
  // A slot left by a clone that failed half-way would make -C fail; the slot keeps the WAL a stopped standby still needs.
  await query(urlOf(primary.port), `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1`, [STANDBY_NAME]);
  // -R writes standby.signal and a primary_conninfo that keeps application_name, for synchronous_standby_names.
  await runAsPostgres(standby.binDir, 'pg_basebackup', ['-d', `host=127.0.0.1 port=${primary.port} user=postgres application_name=${STANDBY_NAME}`,
    '-D', standby.dir, '-R', '-X', 'stream', '-C', '-S', STANDBY_NAME, '--checkpoint=fast', '--no-sync']);
  logger?.info({ dir: standby.dir }, 'cloned the standby from the primary');
}

/** Names the standby in synchronous_standby_names, or clears it; a reload applies it without a restart. */
async function setSynchronous(primaryUrl: string, synchronous: boolean): Promise<void> {
  await query(primaryUrl, synchronous ? `ALTER SYSTEM SET synchronous_standby_names = '${STANDBY_NAME}'` : 'ALTER SYSTEM RESET synchronous_standby_names');
  await query(primaryUrl, synchronous ? 'ALTER SYSTEM SET synchronous_commit = on' : 'ALTER SYSTEM RESET synchronous_commit');
  await query(primaryUrl, 'SELECT pg_reload_conf()');
}

async function waitReplicating(pair: Pair, synchronous: boolean): Promise<void> {
  const [primaryUrl, standbyUrl] = [urlOf(pair.primary.port), urlOf(pair.standby.port)];
  const servers = [pair.primary, pair.standby];
  await until(async () => (await query<{ r: boolean }>(standbyUrl, 'SELECT pg_is_in_recovery() AS r'))[0]?.r === true,
    'the standby in recovery', READY_TIMEOUT_MS, servers);
  const wanted = synchronous ? 'sync' : 'async';
  await until(async () => (await query<{ s: string }>(primaryUrl, 'SELECT sync_state AS s FROM pg_stat_replication WHERE application_name = $1', [STANDBY_NAME]))[0]?.s === wanted,
    `the standby streaming (${wanted}) from the primary`, READY_TIMEOUT_MS, servers);
  // Only written once the standby streams: with synchronous on, this commit waits for it.
  const token = `${Date.now()}-${Math.random()}`;
  await query(primaryUrl, 'CREATE TABLE IF NOT EXISTS replica_probe (id int PRIMARY KEY, token text NOT NULL)');
  await query(primaryUrl, 'INSERT INTO replica_probe VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET token = excluded.token', [token]);
  await until(async () => (await query<{ token: string }>(standbyUrl, 'SELECT token FROM replica_probe WHERE id = 1'))[0]?.token === token,
    'a row written on the primary read on the standby', READY_TIMEOUT_MS, servers);
}

/**
 * Makes the pair in `dataDir` on first use and starts what is stopped; resolves once the standby
 * is in recovery and replays a row written on the primary (and, synchronous, is the sync standby).
 */
export async function startReplicatedPostgres(opts: ReplicaOptions): Promise<ReplicaUrls> {
  const pair = pairOf(opts);
  checkPorts(pair, opts);
  if (existsSync(join(pair.standby.dir, 'PG_VERSION')) && !existsSync(join(pair.standby.dir, 'standby.signal'))) {
    // Starting the old primary beside it would make two primaries.
    throw new Error(`the standby in ${pair.root} was promoted; remove the pair to start afresh`);
  }
  const began = Date.now();
  for (const dir of [pair.root, pair.primary.socketDir]) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    await giveToPostgres(dir);
  }
  await ensurePortFree(pair.primary);
  await ensurePortFree(pair.standby);
  if (!existsSync(join(pair.primary.dir, 'PG_VERSION'))) {
    rmSync(pair.standby.dir, { recursive: true, force: true });
    await initPrimary(pair, opts.logger);
  }
  writeFileSync(pair.settingsFile, `${JSON.stringify({ primaryPort: opts.primaryPort, standbyPort: opts.standbyPort })}\n`);
  if (await startServer(pair.primary)) opts.logger?.info({ port: pair.primary.port }, 'started the primary');
  if (!existsSync(join(pair.standby.dir, 'PG_VERSION'))) await cloneStandby(pair, opts.logger);
  if (await startServer(pair.standby)) opts.logger?.info({ port: pair.standby.port }, 'started the standby');
  const urls = urlsOf(opts);
  await setSynchronous(urls.primaryUrl, opts.synchronous ?? false);
  await waitReplicating(pair, opts.synchronous ?? false);
  opts.logger?.info({ ...urls, synchronous: opts.synchronous ?? false, ms: Date.now() - began }, 'replicated Postgres ready');
  return urls;
}

/** Fast shutdown of both, the primary first so its last WAL reaches the standby. */
export async function stopReplicatedPostgres(opts: ReplicaOptions): Promise<{ stopped: Array<'primary' | 'standby'> }> {
  const pair = pairOf(opts);
  const stopped: Array<'primary' | 'standby'> = [];
  for (const server of [pair.primary, pair.standby]) if (await stopServer(server, 'fast')) stopped.push(server.name);
  opts.logger?.info({ stopped }, 'replicated Postgres stopped');
  return { stopped };
}

/** Stops the primary: `immediate` is the failure a failover test wants (a crash, no shutdown checkpoint). */
export async function stopPrimary(opts: ReplicaOptions, mode: 'fast' | 'immediate'): Promise<void> {
  await stopServer(pairOf(opts).primary, mode);
}

/** Stops the standby alone while the primary goes on: a read replica's outage; `start` brings it back. */
export async function stopStandby(opts: ReplicaOptions, mode: 'fast' | 'immediate'): Promise<void> {
  await stopServer(pairOf(opts).standby, mode);
}

/** Promotes the standby; resolves once it accepts writes. */
export async function promoteStandby(opts: ReplicaOptions): Promise<void> {
  const { standby, primary } = pairOf(opts);
  if (serverPid(standby) === undefined) throw new Error(`the standby of ${resolve(opts.dataDir)} is not running`);
  if (serverPid(primary) !== undefined) opts.logger?.warn({ port: primary.port }, 'promoting while the primary runs: two primaries now take writes');
  await runAsPostgres(standby.binDir, 'pg_ctl', ['promote', '-D', standby.dir, '-w', '-t', '30']);
  await until(async () => (await query<{ r: boolean }>(urlOf(standby.port), 'SELECT pg_is_in_recovery() AS r'))[0]?.r === false,
    'the promoted standby accepting writes', READY_TIMEOUT_MS, [standby, primary]);
  opts.logger?.info({ url: urlOf(standby.port) }, 'standby promoted');
}

/** WAL bytes the primary has written that the standby has not replayed yet. */
export async function replicationLag(primaryUrl: string, standbyUrl: string): Promise<number> {
  const [replayed] = await query<{ lsn: string | null }>(standbyUrl, 'SELECT pg_last_wal_replay_lsn()::text AS lsn');
  if (!replayed?.lsn) throw new Error(`${standbyUrl} is not a standby`);
  const [lag] = await query<{ bytes: string }>(primaryUrl, 'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::text AS bytes', [replayed.lsn]);
  return Math.max(0, Number(lag?.bytes));
}

export async function replicaStatus(opts: ReplicaOptions): Promise<ReplicaStatus> {
  const pair = pairOf(opts);
  const urls = urlsOf(opts);
  const nodeStatus = async (server: Server): Promise<NodeStatus> => {
    const rows = await query<{ r: boolean }>(urlOf(server.port), 'SELECT pg_is_in_recovery() AS r').catch(() => undefined);
    const role = rows?.[0] === undefined ? 'down' : rows[0].r ? 'standby' : 'primary';
    return { pid: serverPid(server), role };
  };
  const [primary, standby] = [await nodeStatus(pair.primary), await nodeStatus(pair.standby)];
  const streaming = primary.role === 'primary'
    ? await query<{ s: string }>(urls.primaryUrl, 'SELECT sync_state AS s FROM pg_stat_replication WHERE application_name = $1', [STANDBY_NAME]).catch(() => [])
    : [];
  const lagBytes = primary.role === 'primary' && standby.role === 'standby'
    ? await replicationLag(urls.primaryUrl, urls.standbyUrl).catch(() => undefined)
    : undefined;
  return { ...urls, primary, standby, syncState: streaming[0]?.s, lagBytes };
}

/** Stops both (a crash is enough: the data goes) and deletes the folder. */
export async function removeReplicatedPostgres(opts: ReplicaOptions): Promise<void> {
  const pair = pairOf(opts);
  if (existsSync(pair.root) && !existsSync(pair.settingsFile) && !existsSync(pair.primary.dir)) {
    throw new Error(`${pair.root} does not hold a replicated Postgres; not deleting it`);
  }
  for (const server of [pair.primary, pair.standby]) await stopServer(server, 'immediate');
  rmSync(pair.root, { recursive: true, force: true });
  opts.logger?.info({ dataDir: pair.root }, 'replicated Postgres removed');
}

function flag(argv: string[], name: string): string | undefined {
  const at = argv.indexOf(name);
  return at >= 0 ? argv[at + 1] : undefined;
}

async function cli(argv: string[]): Promise<number> {
  const { loadConfig } = await import('../platform/config/config.ts');
  const { createLogger } = await import('../platform/log/logger.ts');
  const config = loadConfig();
  const port = (name: string, fallback: number): number => {
    const given = flag(argv, name);
    const value = given === undefined ? fallback : Number(given);
    if (!Number.isInteger(value) || value < 1 || value > 65535) throw new Error(`${name} must be a port number, got "${given}"`);
    return value;
  };
  const opts: ReplicaOptions = {
    dataDir: resolve(flag(argv, '--dir') ?? join(config.dataDir, 'postgres-replica')),
    primaryPort: port('--primary-port', DEFAULT_PRIMARY_PORT),
    standbyPort: port('--standby-port', DEFAULT_STANDBY_PORT),
    synchronous: argv.includes('--sync'),
    logger: createLogger(config.logLevel, 2),
  };
  switch (argv[0]) {
    case 'start': {
      const { primaryUrl, standbyUrl } = await startReplicatedPostgres(opts);
      console.log(`primary ${primaryUrl}\nstandby ${standbyUrl}${opts.synchronous ? ' (synchronous)' : ''}`);
      return 0;
    }
    case 'stop': {
      const { stopped } = await stopReplicatedPostgres(opts);
      console.log(stopped.length > 0 ? `stopped: ${stopped.join(', ')}` : `nothing of ${opts.dataDir} was running`);
      return 0;
    }
    case 'stop-primary':
      await stopPrimary(opts, argv.includes('--immediate') ? 'immediate' : 'fast');
      console.log(`the primary on ${opts.primaryPort} is stopped${argv.includes('--immediate') ? ' (crashed)' : ''}`);
      return 0;
    case 'stop-standby':
      await stopStandby(opts, argv.includes('--immediate') ? 'immediate' : 'fast');
      console.log(`the standby on ${opts.standbyPort} is stopped${argv.includes('--immediate') ? ' (crashed)' : ''}`);
      return 0;
    case 'promote':
      await promoteStandby(opts);
      console.log(`the standby accepts writes: ${urlOf(opts.standbyPort)}`);
      return 0;
    case 'remove':
      await removeReplicatedPostgres(opts);
      console.log(`removed ${opts.dataDir}`);
      return 0;
    case 'status': {
      const status = await replicaStatus(opts);
      console.log(JSON.stringify({ dataDir: opts.dataDir, ...status }, null, 2));
      return status.primary.role !== 'down' || status.standby.role !== 'down' ? 0 : 1;
    }
    default:
      console.error('usage: node scripts/postgres-replica.ts start|stop|status|stop-primary|stop-standby|promote|remove [--dir D] [--primary-port 5441] [--standby-port 5442] [--sync] [--immediate]');
      return 2;
  }
}

if (import.meta.main) {
  cli(process.argv.slice(2)).then((code) => process.exit(code), (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
