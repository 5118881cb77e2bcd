// Postgres connections that outlive the server dropping them: the pool gives a lost client back, the one LISTEN helper reconnects, sessions of their own hold session-level locks (or check the read replica).
import pRetry from 'p-retry';
import pg from 'pg';
import { detached } from '../async-context.ts';
import type { Logger } from '../log/logger.ts';
import { isConnectionState } from './pg-errors.ts';

/**
 * A failover, a pooler's idle timeout or `pg_terminate_backend` ends a connection from the
 * server side. pg reports that as an 'error' event on the client, whether it is idle in a pool,
 * checked out or on its own; an EventEmitter without an 'error' listener throws it, which ends
 * the process. Every client the service opens gets this listener; the query that was running
 * fails on its own, and the pool opens a fresh connection for the next one.
 */
export function watchClient(client: pg.Client, logger: Logger, what: string): pg.Client {
  client.on('error', (error) => logger.warn({ err: error, connection: what }, 'Postgres connection lost'));
  return client;
}

const lostListeners = new WeakMap<pg.PoolClient, (error: Error) => void>();

/**
 * Gives a checked-out client whose connection died back to the pool at once, which discards it,
 * and makes its holder's own release a no-op. Without this a holder that never releases a dead
 * client keeps its slot for ever: Kysely's controlled transactions (MikroORM's `em.transactional`)
 * release their connection only after a COMMIT or ROLLBACK that succeeded, so each drop during
 * one cost a slot, until the pool had none left and `pool.end()` waited for ever.
 */
export function releaseLostClients(pool: pg.Pool): void {
  pool.on('acquire', (client) => {
    const lost = (error: Error) => {
      client.removeListener('error', lost);
      // pg-pool sets `release` after 'acquire': read it only now.
      const release = client.release;
      client.release = () => undefined;
      release.call(client, error);
    };
    lostListeners.set(client, lost);
    client.on('error', lost);
  });
  pool.on('release', (_error: Error | undefined, client: pg.PoolClient) => {
    const lost = lostListeners.get(client);
    if (lost) client.removeListener('error', lost);
  });
}

// The SQLSTATEs of a connection the server ended or refused are pg-errors.ts's isConnectionState.
// A database closed to new connections (ALLOW_CONNECTIONS false, as during maintenance) answers
// the generic 55000, so that one is told by its message.
const CONNECTION_MESSAGES = /Connection terminated|not queryable|is not currently accepting connections|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|timeout exceeded when trying to connect/i;

/**
 * True when `error` says the database connection was lost or could not be made: a fault of the
 * moment, which another try on a new connection can fix, as opposed to what a statement's input
 * caused. 53300 (too many connections) counts: it clears as other clients leave.
 */
export function isConnectionError(error: unknown): boolean {
  for (let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && (isConnectionState(e.code) || CONNECTION_MESSAGES.test(e.code))) return true;
    if (typeof e.message === 'string' && CONNECTION_MESSAGES.test(e.message)) return true;
    if (e instanceof AggregateError && e.errors.some((inner) => isConnectionError(inner))) return true;
  }
  return false;
}

/**
 * Runs `work` again, on a new connection, when it failed because the connection was lost: a
 * failover or a dropped connection then costs the caller a few milliseconds, not an error. Only
 * for work that is safe to repeat (reads, idempotent writes): a connection lost during COMMIT
 * leaves unknown whether the first try committed.
 */
export function retryOnConnectionLoss<T>(work: () => Promise<T>, retries = 2): Promise<T> {
  return pRetry(work, { retries, minTimeout: 50, factor: 4, randomize: true, shouldRetry: ({ error }) => isConnectionError(error) });
}

export interface ChannelListenerOptions {
  readonly databaseUrl: string;
  readonly channel: string;
  readonly logger: Logger;
  readonly onNotify: () => void;
  /**
   * Called each time LISTEN has taken effect, the first time included: whatever was notified
   * while no connection listened was missed, so the caller looks for work it may have missed.
   */
  readonly onListening?: () => void;
  readonly minBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

export interface ChannelListener {
  /** Settles once the first attempt to listen succeeded (true) or failed (false); tries go on meanwhile. */
  readonly firstAttempt: Promise<boolean>;
  /** Whether a connection listens right now. */
  readonly listening: boolean;
  close(): Promise<void>;
}

/**
 * LISTENs on `channel` on a dedicated connection. When the server drops it, a new one is opened
 * with exponential backoff (p-retry, jittered) until it works or `close()` is called, and LISTEN
 * is issued again. NOTIFY is a wake-up call only: every caller also polls, so a lost connection
 * delays work, never loses it.
 */
export function listenToChannel(options: ChannelListenerOptions): ChannelListener {
  const log = options.logger.child({ channel: options.channel });
  const stopped = new AbortController();
  let client: pg.Client | undefined;
  let connecting: Promise<void> | undefined;
  let announceFirst: (ok: boolean) => void = () => undefined;
  const firstAttempt = new Promise<boolean>((resolve) => { announceFirst = resolve; });

  async function openOnce(): Promise<pg.Client> {
    // Bounded: a connect that never completes (an address that swallows packets) would stall reconnecting.
    const fresh = new pg.Client({ connectionString: options.databaseUrl, connectionTimeoutMillis: 10_000 });
    fresh.on('notification', options.onNotify);
    fresh.on('error', (error) => {
      if (client !== fresh) return;
      log.warn({ err: error }, 'LISTEN connection lost; reconnecting');
      client = undefined;
      fresh.end().catch(() => undefined);
      reconnect();
    });
    try {
      await fresh.connect();
      await fresh.query(`LISTEN ${options.channel}`);
      return fresh;
    } catch (error) {
      await fresh.end().catch(() => undefined);
      throw error;
    }
  }

  function reconnect(): void {
    if (connecting || stopped.signal.aborted) return;
    // Started from a lost connection's error handler: the new connection owes it nothing.
    connecting = detached(() => pRetry(openOnce, {
      retries: Infinity,
      minTimeout: options.minBackoffMs ?? 100,
      maxTimeout: options.maxBackoffMs ?? 5000,
      randomize: true,
      signal: stopped.signal,
      onFailedAttempt: ({ error, attemptNumber, retryDelay }) => {
        if (attemptNumber === 1) announceFirst(false);
        log.warn({ err: error, attempt: attemptNumber, retryInMs: retryDelay }, 'LISTEN failed; polling until it works');
      },
    })).then((opened) => {
      connecting = undefined;
      if (stopped.signal.aborted) {
        void opened.end().catch(() => undefined);
        return;
      }
      client = opened;
      announceFirst(true);
      options.onListening?.();
    }, () => {
      // Only an abort ends the retries: close() was called.
      connecting = undefined;
      announceFirst(false);
    });
  }

  reconnect();
  return {
    firstAttempt,
    get listening() { return client !== undefined; },
    async close() {
      stopped.abort();
      await connecting;
      const current = client;
      client = undefined;
      await current?.end().catch(() => undefined);
    },
  };
}

/** A connection of its own (openSession): its statements, and its end. */
export interface Session {
  /** Runs a statement with `$1…$n` parameters on this session's connection. */
  query<Row>(text: string, params?: readonly unknown[]): Promise<Row[]>;
  /** Ends the connection, which releases whatever the session held. */
  close(): Promise<void>;
}

export interface SessionOptions {
  /** Bounds connecting and each statement; unbounded when unset (a migration may take its time). */
  readonly timeoutMs?: number;
  /**
   * Called once when the connection is lost (not when closed): what the session held is gone
   * that moment, before any statement of the holder's would find out.
   */
  readonly onLost?: (error: Error) => void;
}

/**
 * A connection outside the pool, for what must last exactly as long as a session: a
 * session-level advisory lock held across many transactions, which the server releases when the
 * connection ends, a killed process's included; or a check that must not wait for a pooled
 * connection behind requests (the read replica's, bounded by `timeoutMs`). Its loss is logged (`what` names it), never
 * thrown: the holder's own checks must cope with having lost what the session held.
 */
export async function openSession(databaseUrl: string, logger: Logger, what: string, options: SessionOptions = {}): Promise<Session> {
  const { timeoutMs } = options;
  // The server ends a statement past the bound; pg gives up on an answer that never comes (a
  // server that swallows packets) a second later, and on a connection that never completes.
  const bounds = timeoutMs === undefined ? {} : { connectionTimeoutMillis: timeoutMs, statement_timeout: timeoutMs, query_timeout: timeoutMs + 1000 };
  const client = watchClient(new pg.Client({ connectionString: databaseUrl, ...bounds }), logger, what);
  let ended = false;
  const lost = (error: Error) => {
    if (ended) return;
    ended = true;
    options.onLost?.(error);
  };
  client.on('error', lost);
  client.on('end', () => lost(new Error(`the connection of ${what} ended`)));
  try {
    await client.connect();
  } catch (error) {
    ended = true;
    await client.end().catch(() => undefined);
    throw error;
  }
  return {
    query: async <Row>(text: string, params: readonly unknown[] = []) => (await client.query(text, [...params])).rows as Row[],
    close: () => {
      ended = true;
      return client.end().catch(() => undefined);
    },
  };
}
