// A table's first ANALYZE as soon as it holds some rows, so that plans made while it was empty do not outlive that.
import { setTimeout } from 'node:timers';
import type { Logger } from '../log/logger.ts';
import type { Orm } from './orm.ts';
import { query } from './sql.ts';

export interface FirstStatisticsOptions {
  /** Tables (names as in SQL) whose lookups go wrong while Postgres plans them as empty. */
  tables: readonly string[];
  /** Live rows from which a table is analysed. */
  rows: number;
  /** Time between two looks at the tables. */
  intervalMs: number;
}

const NOT_YET_ANALYSED = `
    SELECT c.oid::regclass::text AS name, coalesce(s.n_live_tup, 0) >= $2 AS due
    FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
    WHERE c.oid = ANY($1::regclass[]) AND c.reltuples < 0`;

/**
 * Each connection keeps the plan of a prepared statement until an ANALYZE of its tables (or a
 * change to them) makes it plan anew. In a new database the first plans are made while the
 * tables are empty, and they probe an index that filters a whole catalog once the tables are
 * not: single upserts slow down as the table grows (bench/results/2026-11-25-new-database.md).
 * Autovacuum's first ANALYZE comes on its next round, a minute or more later. So every
 * `intervalMs`, until each of `tables` has statistics (Postgres's `reltuples` is -1 until then),
 * one that holds `rows` or more is analysed here; after that autovacuum keeps them. A table
 * another process is analysing is skipped.
 */
export function analyseOnceFilled(orm: Orm, logger: Logger, options: FirstStatisticsOptions): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const look = async () => {
    try {
      const db = orm.em.fork();
      const tables = await query<{ name: string; due: boolean }>(db, 'statistics.not_yet_analysed', NOT_YET_ANALYSED, [options.tables, options.rows]);
      const due = tables.filter((table) => table.due).map((table) => table.name);
      if (due.length > 0) {
        await query(db, 'statistics.analyse', `ANALYZE (SKIP_LOCKED) ${due.join(', ')}`);
        logger.info({ tables: due }, 'first statistics gathered');
      }
      if (tables.length === due.length) return;
    } catch (error) {
      logger.warn({ err: error }, 'could not look at the tables\' statistics; it looks again');
    }
    if (!stopped) timer = setTimeout(() => { running = look(); }, options.intervalMs).unref();
  };
  running = look();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
