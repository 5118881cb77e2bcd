// The read replica's settings (DATABASE_READ_*): where the contract's lag-tolerant reads go, how stale they may be, how often that is checked.
import { ConfigError, int } from './parse.ts';
import type { Env } from './parse.ts';

export interface ReadReplicaConfig {
  /** DATABASE_READ_URL: a streaming standby of DATABASE_URL's server, naming the same database. */
  readonly url: string;
  /** DATABASE_READ_MAX_LAG_MS: past this replay lag, marked reads go to the primary. */
  readonly maxLagMs: number;
  /** DATABASE_READ_CHECK_INTERVAL_MS: how often the replica's lag is read, in the background. */
  readonly checkIntervalMs: number;
}

/**
 * The replica's settings, undefined when DATABASE_READ_URL is unset (every read on the primary).
 * The bound and the interval are checked even then, so a typo does not wait for the day the URL is set.
 */
export function readReplicaConfig(env: Env): ReadReplicaConfig | undefined {
  const maxLagMs = int(env, 'DATABASE_READ_MAX_LAG_MS', 5000, 0, 3_600_000);
  const checkIntervalMs = int(env, 'DATABASE_READ_CHECK_INTERVAL_MS', 1000, 50, 60_000);
  const raw = env.DATABASE_READ_URL?.trim();
  if (!raw) return undefined;
  return Object.freeze({ url: postgresUrl(raw), maxLagMs, checkIntervalMs });
}

// The value is never repeated in the message: it may carry a password.
function postgresUrl(raw: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    // Reported below.
  }
  if (!url || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')) {
    throw new ConfigError('DATABASE_READ_URL must be a postgres:// (or postgresql://) address; its value is not shown, as it may hold a password');
  }
  if (decodeURIComponent(url.pathname.replace(/^\//, '')) === '') {
    throw new ConfigError(`DATABASE_READ_URL must name a database (the one DATABASE_URL names, as the standby replicates it), host ${url.host}`);
  }
  return raw;
}
