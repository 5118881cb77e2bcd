// Postgres errors by SQLSTATE name: the one place a code is matched, and the door from a failure to the product's error.
import type { ProductError } from '../errors.ts';

/** The codes the service tells apart, under the names of Postgres's errcodes table ("Appendix A"). */
const SQLSTATES = {
  unique_violation: '23505',
  foreign_key_violation: '23503',
  duplicate_database: '42P04',
  invalid_catalog_name: '3D000',
  too_many_connections: '53300',
  admin_shutdown: '57P01',
  crash_shutdown: '57P02',
  cannot_connect_now: '57P03',
  // On a hot standby, what a read gets when replaying the primary's changes cancels it.
  serialization_failure: '40001',
} as const;

export type SqlStateName = keyof typeof SQLSTATES;

/** Class 08 (connection exception) and the codes of a server going away or full: another connection may succeed. */
const CONNECTION_CLASS = '08';
const CONNECTION_STATES: readonly string[] = [SQLSTATES.admin_shutdown, SQLSTATES.crash_shutdown, SQLSTATES.cannot_connect_now, SQLSTATES.too_many_connections];

export interface DatabaseFailure {
  /** The five-character SQLSTATE. */
  code: string;
  /** The constraint a violation names, when it names one. */
  constraint?: string;
}

const isSqlState = (code: unknown): code is string => typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);

/** The database failure in `error` or in what it wraps (MikroORM wraps the driver's error); undefined for anything else. */
export function databaseFailure(error: unknown): DatabaseFailure | undefined {
  for (let e = error as { code?: unknown; constraint?: unknown; cause?: unknown } | undefined, depth = 0; e && typeof e === 'object' && depth < 5; e = e.cause as typeof e, depth++) {
    if (isSqlState(e.code)) return typeof e.constraint === 'string' ? { code: e.code, constraint: e.constraint } : { code: e.code };
  }
  return undefined;
}

/** Whether `error` is a database failure with one of these SQLSTATEs. */
export function hasSqlState(error: unknown, ...names: SqlStateName[]): boolean {
  const failure = databaseFailure(error);
  return failure !== undefined && names.some((name) => SQLSTATES[name] === failure.code);
}

/** Whether a SQLSTATE says the connection was lost or refused, rather than what a statement did. */
export function isConnectionState(code: string): boolean {
  return code.startsWith(CONNECTION_CLASS) || CONNECTION_STATES.includes(code);
}

/** What a failure means to the caller, by SQLSTATE name; given the violated constraint, undefined when it means nothing particular. */
export type FailureMeanings = { readonly [Name in SqlStateName]?: (constraint: string | undefined) => ProductError | undefined };

/**
 * The product error a database failure stands for, as its caller reads it (a unique violation
 * is a conflict on one table and a race on another); undefined when the error is no database
 * failure or no meaning applies, so the caller decides what the rest is.
 */
export function productErrorOf(error: unknown, meanings: FailureMeanings): ProductError | undefined {
  const failure = databaseFailure(error);
  if (!failure) return undefined;
  const name = (Object.keys(SQLSTATES) as SqlStateName[]).find((candidate) => SQLSTATES[candidate] === failure.code);
  return name === undefined ? undefined : meanings[name]?.(failure.constraint);
}
