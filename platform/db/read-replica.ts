// The read replica: a second pool on DATABASE_READ_URL and its health, read in the background, so that choosing it for a request costs no round trip.
import { detached } from '../async-context.ts';
import type { Logger } from '../log/logger.ts';
import { openSession } from './connections.ts';
import type { Session } from './connections.ts';
import { openDatabase, shownDatabaseUrl } from './orm.ts';
import type { Orm } from './orm.ts';

// A replica too slow to answer a one-row check within this is too slow to read from.
const CHECK_TIMEOUT_MS = 1000;

/**
 * The standby's replay lag, on its own clock against the primary's commit times (PostgreSQL 15).
 * Everything received already replayed is no lag, however long ago the last transaction was (an
 * idle primary sends none); otherwise it is the age of the last replayed transaction, which
 * overstates the lag after an idle spell and so errs towards the primary. A server out of
 * recovery (promoted, or a plain one) has no lag. A standby without a running WAL receiver has
 * stopped hearing from its primary: its "everything received is replayed" says nothing then.
 */
const LAG_SQL = `SELECT pg_is_in_recovery() AS standby,
  EXISTS (SELECT 1 FROM pg_stat_wal_receiver) AS receiving,
  (CASE WHEN NOT pg_is_in_recovery() THEN 0
        WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
        ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()) END)::float8 AS lag_seconds`;

/** What a replica's server says of itself: a standby or not, streaming or not, and its lag (null: nothing replayed yet). */
export interface ReplicaState {
  readonly standby: boolean;
  readonly receiving: boolean;
  readonly lagSeconds: number | null;
}

export async function replicaState(session: Session): Promise<ReplicaState> {
  const [row] = await session.query<{ standby: boolean; receiving: boolean; lag_seconds: number | null }>(LAG_SQL);
  if (!row) throw new Error('the lag query returned no row');
  // Clocks a little apart can make a fresh replay look as if it came from the future.
  return { standby: row.standby, receiving: row.receiving, lagSeconds: row.lag_seconds === null ? null : Math.max(0, row.lag_seconds) };
}

export interface ReadReplicaOptions {
  /** DATABASE_READ_URL. */
  readonly databaseUrl: string;
  /** Past this lag, reads go to the primary. */
  readonly maxLagMs: number;
  readonly checkIntervalMs: number;
  readonly poolSize: number;
  readonly logger: Logger;
}

export interface ReadReplica {
  /** The replica's ORM, for the reads `usable()` lets through. */
  readonly orm: Orm;
  /** Whether a read may go to the replica now: its last check answered, with a lag within the bound. Reads memory only. */
  usable(): boolean;
  /** The lag in seconds the last check read; NaN when the replica did not answer or cannot tell (not streaming). */
  lagSeconds(): number;
  /** A read on the replica lost its connection: reads go to the primary until a check finds the replica well. */
  lost(error: unknown): void;
  close(): Promise<void>;
}

/** What the last check found; `refusal` says why reads go to the primary, undefined when they may go to the replica. */
interface Health {
  readonly lagSeconds: number;
  readonly refusal: string | undefined;
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Opens the replica's pool without connecting (a standby that is down must not keep the service
 * from starting), checks it once, then every `checkIntervalMs` on a connection of its own, outside
 * the pool, so a check never waits behind requests. One warning when reads leave the replica, one
 * info line when they come back.
 */
export async function openReadReplica(options: ReadReplicaOptions): Promise<ReadReplica> {
  const { databaseUrl, maxLagMs, checkIntervalMs, logger } = options;
  const replica = shownDatabaseUrl(databaseUrl);
  // A standby that swallows packets must cost a read a second before it goes to the primary, not the system's TCP timeout.
  const orm = await openDatabase({
    databaseUrl, logger, migrate: false, create: false, probe: false, poolSize: options.poolSize, connectTimeoutMs: CHECK_TIMEOUT_MS,
  });
  let session: Session | undefined;
  // The check reports an outage itself, once per episode: the loss of its own connection is no news of its own.
  const sessionLogger = logger.child({}, { level: 'error' });
  let health: Health = { lagSeconds: Number.NaN, refusal: 'not checked yet' };
  // Whether reads have been on the replica since the last warning: the start counts as a change, so its first check is logged either way.
  let inUse: boolean | undefined;

  const apply = (next: Health) => {
    health = next;
    const usable = next.refusal === undefined;
    if (usable === inUse) return;
    inUse = usable;
    const lagSeconds = Number.isNaN(next.lagSeconds) ? null : next.lagSeconds;
    if (usable) logger.info({ replica, lagSeconds }, 'marked reads go to the read replica');
    else logger.warn({ replica, reason: next.refusal, lagSeconds, maxLagSeconds: maxLagMs / 1000 }, 'read replica unusable: marked reads go to the primary');
  };

  const check = async (): Promise<Health> => {
    try {
      session ??= await openSession(databaseUrl, sessionLogger, 'read replica check', { timeoutMs: CHECK_TIMEOUT_MS });
      const state = await replicaState(session);
      if (state.standby && !state.receiving) return { lagSeconds: Number.NaN, refusal: 'the standby is not streaming from its primary (no WAL receiver)' };
      if (state.lagSeconds === null) return { lagSeconds: Number.NaN, refusal: 'the standby has not replayed a transaction since it started' };
      const { lagSeconds } = state;
      const lagMs = Math.round(lagSeconds * 1000);
      return { lagSeconds, refusal: lagMs > maxLagMs ? `its lag of ${lagMs} ms is past the bound of ${maxLagMs} ms` : undefined };
    } catch (error) {
      const broken = session;
      session = undefined;
      await broken?.close();
      return { lagSeconds: Number.NaN, refusal: `it does not answer: ${messageOf(error)}` };
    }
  };

  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const schedule = () => {
    if (stopped) return;
    // In the root context: the checks belong to no request (docs/design.md, "Async context").
    timer = setTimeout(() => { running = detached(async () => apply(await check())).finally(schedule); }, checkIntervalMs);
    timer.unref();
  };
  apply(await check());
  schedule();

  return {
    orm,
    usable: () => health.refusal === undefined,
    lagSeconds: () => health.lagSeconds,
    lost(error) {
      if (health.refusal === undefined) apply({ lagSeconds: Number.NaN, refusal: `a read lost its connection: ${messageOf(error)}` });
    },
    async close() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await session?.close();
      await orm.close();
    },
  };
}
