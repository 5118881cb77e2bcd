// Parameterized SQL through MikroORM's own pool and transaction, for the hot paths.
import type { EntityManager } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';
import type { Kysely, Transaction } from 'kysely';

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
