// A new database's items table is analysed by the service once it holds its first thousand items, without waiting for autovacuum's round.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { FIRST_STATISTICS } from '../../app/service.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

// A backend that goes idle reports its row counts to Postgres's statistics within 10 s
// (PGSTAT_IDLE_INTERVAL); the service looks every FIRST_STATISTICS.intervalMs after that.
const POSTGRES_IDLE_STATS_FLUSH_MS = 10_000;

let service: TestService;
let tenant: Tenant;
let sql: Awaited<ReturnType<typeof sqlClient>>;

before(async () => {
  service = await startTestService(import.meta.filename);
  tenant = await service.newTenant();
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await sql?.end();
  await service?.close();
});

const itemsStatistics = async () => (await sql.query<{ reltuples: number; last_analyze: Date | null }>(
  `SELECT c.reltuples, s.last_analyze FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = 'items'::regclass`)).rows[0]!;

test('the items table gets its first statistics from the service once it holds the first thousand items', async () => {
  assert.ok((await itemsStatistics()).reltuples < 0, 'a new database starts without statistics');
  const items = Array.from({ length: FIRST_STATISTICS.rows }, (_, i) => ({ externalSystem: 'erp', externalId: `first-${i}`, name: `Item ${i}`, price: 1 }));
  expectData(await api.bulkUpsertItems({ items }, clientOptions(service.url, tenant.key)), 200);
  const deadline = Date.now() + POSTGRES_IDLE_STATS_FLUSH_MS + 5 * FIRST_STATISTICS.intervalMs;
  let statistics = await itemsStatistics();
  while (statistics.last_analyze === null && Date.now() < deadline) {
    await sleep(FIRST_STATISTICS.intervalMs / 4);
    statistics = await itemsStatistics();
  }
  // An ANALYZE that autovacuum ran would show as last_autoanalyze, not last_analyze.
  assert.ok(statistics.last_analyze, 'the service did not analyse the items table');
  assert.equal(statistics.reltuples, FIRST_STATISTICS.rows);
});
