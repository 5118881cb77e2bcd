// Parameterized SQL through MikroORM's own pool and transaction, for the hot paths.
import type { EntityManager } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';
import type { Kysely, Transaction } from 'kysely';
import pg from 'pg';

/**
 * Runs `text` with `$1…$n` parameters sent to Postgres separately, inside the entity manager's
 * transaction when it has one. `em.execute` formats parameters into the SQL text on the client:
 * fine for rare statements, but on the upsert path the large JSON parameters cost a copy and an
 * escape each, and every statement text is new to the server.
 */
export async function query<Row>(em: EntityManager, text: string, params: readonly unknown[] = []): Promise<Row[]> {
  const executor = (em.getTransactionContext<Transaction<unknown>>() ?? em.getConnection().getClient()) as Kysely<unknown>;
  const result = await executor.executeQuery<Row>(CompiledQuery.raw(text, [...params]));
  return result.rows as Row[];
}

const preparedNames = new Map<string, string>();

/**
 * Marks a statement text (fixed, with `$n` parameters) as one to run as a named prepared
 * statement: each connection parses and plans it once and then reuses the plan, where an
 * unnamed statement is planned on every run. For the few statements of the per-request hot
 * path, whose planning costs more than their execution. Returns the text.
 */
export function prepared(text: string): string {
  if (!preparedNames.has(text)) preparedNames.set(text, `catalog_${preparedNames.size + 1}`);
  return text;
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
