// A relay's outbox lanes against a real Postgres: lost with their connection the moment it drops, never held by two relays, taken back on the next rebalance.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { LANE_LOCK_SPACE, createLaneHolder } from '../../consumers/relay/lanes.ts';
import type { LaneHolder } from '../../consumers/relay/lanes.ts';
import { LEGACY_LANE, OUTBOX_LANES } from '../../domain/events/outbox.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { freshDatabase, sqlClient } from '../helpers/database.ts';
import { eventually } from '../helpers/media.ts';

const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
const ALL = OUTBOX_LANES + 1;
let databaseUrl: string;
let db: pg.Client;
const holders: LaneHolder[] = [];

const holder = () => {
  const made = createLaneHolder({ databaseUrl, logger });
  holders.push(made);
  return made;
};

/** The backends holding lane locks in this database. */
const laneBackends = async (): Promise<number[]> => (await db.query(`SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
  AND classid = ${LANE_LOCK_SPACE}::int4::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)).rows.map((r: { pid: number }) => r.pid);

before(async () => {
  databaseUrl = await freshDatabase(import.meta.url);
  await (await openDatabase({ databaseUrl, logger })).close();
  db = await sqlClient(databaseUrl);
});

after(async () => {
  for (const made of holders) await made.close();
  await db?.end();
});

test("a relay alone holds every lane; when its connection is terminated it holds none at once, before its next rebalance, and takes them back on it", async () => {
  const first = holder();
  await first.rebalance();
  assert.deepEqual(first.held().sort((a, b) => a - b), [LEGACY_LANE, ...Array.from({ length: OUTBOX_LANES }, (_, i) => i)].sort((a, b) => a - b));
  const [backend] = await laneBackends();
  await db.query('SELECT pg_terminate_backend($1)', [backend]);
  // No rebalance in between: the loss alone must empty what the next claim would read.
  await eventually(async () => (first.held().length === 0 ? true : undefined), 'the lanes to be given up with their connection', 10_000);

  // Another relay may take them now; the first takes its share back on its next rebalance, and no lane is held twice.
  const second = holder();
  await second.rebalance();
  assert.equal(second.held().length, ALL);
  await first.rebalance();
  await second.rebalance();
  await first.rebalance();
  const both = [...first.held(), ...second.held()];
  assert.equal(new Set(both).size, both.length, 'no lane held by both relays');
  assert.equal(both.length, ALL, 'every lane held');
  assert.ok(first.held().length > 0 && second.held().length > 0, `each relay holds its share (${first.held().length} and ${second.held().length})`);
});
