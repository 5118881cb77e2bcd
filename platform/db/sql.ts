// The one way to run SQL: parameterized statements on MikroORM's pool, in the caller's transaction when it has one.
import type { EntityManager } from '@mikro-orm/postgresql';
import { CompiledQuery, sql } from 'kysely';
import type { Kysely, RawBuilder, Transaction } from 'kysely';
import pg from 'pg';
import { inSpan, tracingOn } from '../tracing.ts';

/**
 * What every store is given: MikroORM's entity manager. Inside `db.transactional(fn)` (the one
 * transaction helper) the `db` that `fn` receives runs every statement in that transaction.
 */
export type Db = EntityManager;
/** A timestamp column as `query` returns it: MikroORM's pool hands timestamps over as the server's text, not as Dates. */
export type Timestamp = Date | string;

/** Kysely's `sql` tag, for statements built from parts: each part numbers its own parameters. */
export { sql };
export type SqlFragment = RawBuilder<unknown>;

/**
 * The db's own transaction, or the pool. Never an ambient one: MikroORM's global entity manager
 * would run in whatever transaction the async context carries, and a context can outlive its
 * transaction (platform/async-context.ts). A transaction reaches a store as the `db` it is given.
 */
function executorOf(db: Db): Kysely<unknown> {
  const transaction = db.global ? undefined : db.getTransactionContext<Transaction<unknown>>();
  return (transaction ?? db.getConnection().getClient()) as Kysely<unknown>;
}

/** Told of every statement `query` runs: its name and how long it took, failed or not. */
export type StatementObserver = (name: string, seconds: number) => void;

/** The name of a statement run without one. */
export const UNNAMED = 'unnamed';

// Per ORM (its configuration, which every fork shares), so two in one process report apart.
const observers = new WeakMap<object, StatementObserver>();

/** Reports every statement `query` runs on this ORM's entity managers to `observer`. */
export function observeStatements(orm: { config: object }, observer: StatementObserver): void {
  observers.set(orm.config, observer);
}

type Statement = [statement: string | SqlFragment, params?: readonly unknown[]];

/**
 * Runs a statement: a text with `$1…$n` and its parameters, or a `sql` fragment. Parameters go
 * to Postgres separately (`em.execute` formats them into the text on the client: on the hot
 * paths the large JSON parameters cost a copy and an escape each, and every text is new to the
 * server). The name (`area.what`, such as `items.lookup`) tells the statement apart in the debug
 * log and in `/metrics`; a statement without one is reported as `unnamed`.
 */
export async function query<Row>(db: Db, name: string, ...statement: Statement): Promise<Row[]>;
export async function query<Row>(db: Db, ...statement: Statement): Promise<Row[]>;
export async function query<Row>(db: Db, ...args: [string, ...Statement] | Statement): Promise<Row[]> {
  const named = typeof args[0] === 'string' && args[1] !== undefined && !Array.isArray(args[1]);
  const [name, statement, params = []] = (named ? args : [UNNAMED, ...args]) as [string, ...Statement];
  const observe = observers.get(db.config);
  const started = observe ? performance.now() : 0;
  const executor = executorOf(db);
  let compiled: CompiledQuery;
  if (typeof statement === 'string') compiled = CompiledQuery.raw(statement, [...params]);
  else {
    compiled = statement.compile(executor);
    if (preparedFragments.has(statement)) prepared(compiled.sql);
  }
  try {
    // A span named by the statement's name, or by its command and table when it has none.
    const result = tracingOn()
      ? await inSpan(`db ${name === UNNAMED ? summary(compiled.sql) : name}`, { kind: 'client', childOnly: true, attributes: { 'db.system.name': 'postgresql' } },
        () => executor.executeQuery<Row>(compiled))
      : await executor.executeQuery<Row>(compiled);
    return result.rows as Row[];
  } finally {
    observe?.(name, (performance.now() - started) / 1000);
  }
}

/** A statement's span name: its first command and table (`INSERT outbox`, `SELECT items`), never its values. */
function summary(text: string): string {
  const found = /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM|FROM)\s+([a-z_][a-z0-9_]*)/i.exec(text);
  if (!found) return /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? 'statement';
  const command = found[1]!.split(/\s+/)[0]!.toUpperCase();
  return `${command === 'FROM' ? 'SELECT' : command} ${found[2]}`;
}

const preparedNames = new Map<string, string>();

const preparedFragments = new WeakSet<SqlFragment>();

/**
 * Marks a statement (a fixed text with `$n` parameters, or a `sql` fragment whose text is the
 * same on every call) as one to run as a named prepared statement: each connection parses and
 * plans it once and then reuses the plan, where an unnamed statement is planned on every run.
 * For the statements of the per-request hot paths, whose planning costs more than their
 * execution. Returns what it was given.
 */
export function prepared<S extends string | SqlFragment>(statement: S): S {
  if (typeof statement !== 'string') preparedFragments.add(statement);
  else if (!preparedNames.has(statement)) preparedNames.set(statement, `catalog_${preparedNames.size + 1}`);
  return statement;
}

/** The pool's client class (`driverOptions.Client`): sends texts marked by `prepared` by name. */
export class PreparingClient extends pg.Client {
  // pg's own overloads; only `query(text, values)`, the form Kysely uses, is rerouted.
  override query(...args: any[]): any {
    const [text, values] = args;
    const name = typeof text === 'string' && Array.isArray(values) && args.length === 2 ? preparedNames.get(text) : undefined;
    return name === undefined
      ? (super.query as (...a: unknown[]) => unknown)(...args)
      : super.query({ name, text, values });
  }
}

/**
 * Runs a SELECT `sql` fragment and yields its rows, read `chunkSize` at a time through a
 * server-side cursor: one statement and one snapshot, in flat memory whatever the result's size.
 * Outside a transaction it holds a pooled connection until the rows are read or the loop ends.
 */
export async function* streamQuery<Row>(db: Db, statement: SqlFragment, chunkSize: number): AsyncGenerator<Row> {
  const executor = executorOf(db);
  for await (const chunk of executor.getExecutor().stream<Row>(statement.compile(executor) as CompiledQuery<Row>, chunkSize)) yield* chunk.rows;
}
