// The item write's fallbacks at the middle layer, on the real Postgres: its entry points called directly, each fallback forced, what was written checked.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { listEvents } from '../../domain/events/event-log.ts';
import { lineFingerprint } from '../../domain/imports/fingerprint.ts';
import {
  BatchRecordRefused, WriteFailed, dryRunImportBatch, writeImportBatchIsolated, writeImportBatchOrAbort, writeImportBatchWithRecord,
} from '../../domain/items/import-write.ts';
import type { BatchRecordOf, ImportBatchWrite } from '../../domain/items/import-write.ts';
import { normalizeItem } from '../../domain/items/payload.ts';
import { addNormalized, upsertItems } from '../../domain/items/upsert.ts';
import type { PreparedItems, UpsertEntry } from '../../domain/items/upsert.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { hasSqlState } from '../../platform/db/pg-errors.ts';
import { observeStatements, sql } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { freshDatabase, sqlClient } from '../helpers/database.ts';

const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn');
// Generous: the machine may be busy; a lock wait shows up in milliseconds when it is not.
const LOCK_WAIT_TIMEOUT_MS = 30_000;
const REFRESH_HOURS = 24;

let orm: Orm;
let db: pg.Client;
const statementNames: string[] = [];

before(async () => {
  const databaseUrl = await freshDatabase(import.meta.url);
  orm = await openDatabase({ databaseUrl, logger, poolSize: 6 });
  observeStatements(orm, (name) => statementNames.push(name));
  db = await sqlClient(databaseUrl);
});

after(async () => {
  await orm?.close();
  await db?.end();
});

const item = (externalId: string, sku: string) => ({ externalSystem: 'erp', externalId, sku, name: `Item ${externalId}`, price: 10 });

function prepared(inputs: readonly unknown[]): PreparedItems {
  const into: PreparedItems = { entries: new Array(inputs.length), valid: [] };
  inputs.forEach((input, index) => addNormalized(into, normalizeItem(input), index, lineFingerprint(Buffer.from(JSON.stringify(input)))));
  return into;
}

/** The catalog's items as stored: external id and SKU, by external id. */
async function storedItems(catalogId: string): Promise<string[][]> {
  const { rows } = await db.query('SELECT external_id, sku FROM items WHERE catalog_id = $1 ORDER BY external_id', [catalogId]);
  return rows.map((row) => [row.external_id, row.sku]);
}

/** The catalog's events as GET /events lists them: type and resource. */
async function events(catalogId: string): Promise<string[][]> {
  const { events: list } = await listEvents(orm.em.fork(), catalogId, { limit: 100 });
  return list.map((event) => [event.type, event.resourceId]).sort((a, b) => a[1]!.localeCompare(b[1]!));
}

const outcomes = (entries: readonly UpsertEntry[]) => entries.map((entry) => entry.status);

/** A waitTurn that, once, lets another writer commit an item holding `sku` between the batch's lookup and its write. */
function holderTakes(catalogId: string, sku: string): ImportBatchWrite['waitTurn'] {
  let done = false;
  return async () => {
    if (!done) {
      done = true;
      const [entry] = await upsertItems(orm.em.fork(), catalogId, [item('holder', sku)], { mediaRefreshAgeHours: REFRESH_HOURS });
      assert.equal(entry?.status, 'created');
    }
    return false;
  };
}

const batch = () => prepared([item('a1', 'SKU-1'), item('a2', 'SKU-2'), item('a3', 'SKU-3')]);

test('an import batch written in its transaction without savepoints: a SKU taken after the lookup throws WriteFailed, and the rollback leaves nothing of it', async () => {
  const catalogId = newId();
  const write = { mediaRefreshAgeHours: REFRESH_HOURS, waitTurn: holderTakes(catalogId, 'SKU-2') };
  await assert.rejects(
    orm.em.fork().transactional((tx) => writeImportBatchOrAbort(tx, catalogId, batch(), write)),
    (error) => error instanceof WriteFailed && hasSqlState(error, 'unique_violation'),
  );
  assert.deepEqual(await storedItems(catalogId), [['holder', 'SKU-2']]);
  assert.deepEqual(await events(catalogId), [['item.created', 'holder']]);
});

test('an import batch isolating failures: the batch write fails mid-batch, each item is written alone, the one whose SKU was taken is a conflict', async () => {
  const catalogId = newId();
  const write = { mediaRefreshAgeHours: REFRESH_HOURS, waitTurn: holderTakes(catalogId, 'SKU-2') };
  const entries = await orm.em.fork().transactional((tx) => writeImportBatchIsolated(tx, catalogId, batch(), write));
  assert.deepEqual(outcomes(entries), ['created', 'error', 'created']);
  const failed = entries[1]!;
  assert.ok(failed.status === 'error');
  assert.equal(failed.error.code, 'conflict');
  assert.deepEqual(failed.error.details?.map((detail) => detail.path), ['sku']);
  assert.deepEqual(await storedItems(catalogId), [['a1', 'SKU-1'], ['a3', 'SKU-3'], ['holder', 'SKU-2']]);
  assert.deepEqual(await events(catalogId), [['item.created', 'a1'], ['item.created', 'a3'], ['item.created', 'holder']]);
});

/** A batch record whose gate passes or not; `recorded` proves it applied. */
const batchRecord = (passes: boolean): BatchRecordOf => () => ({
  gate: passes ? sql`SELECT 1 AS open` : sql`SELECT 1 AS open WHERE false`,
  ctes: sql`recorded AS (SELECT 1 FROM gate)`,
  applied: sql`(SELECT count(*) FROM recorded)`,
});

test('an import batch with its batch record in the write\'s statement: written with it when the gate opens, nothing at all when it refuses (BatchRecordRefused)', async () => {
  const catalogId = newId();
  const base = { mediaRefreshAgeHours: REFRESH_HOURS, waitTurn: async () => false };
  await assert.rejects(writeImportBatchWithRecord(orm.em.fork(), catalogId, batch(), { ...base, batchRecord: batchRecord(false) }), BatchRecordRefused);
  assert.deepEqual(await storedItems(catalogId), []);
  assert.deepEqual(await events(catalogId), []);
  const entries = await writeImportBatchWithRecord(orm.em.fork(), catalogId, batch(), { ...base, batchRecord: batchRecord(true) });
  assert.deepEqual(outcomes(entries), ['created', 'created', 'created']);
  assert.deepEqual(await storedItems(catalogId), [['a1', 'SKU-1'], ['a2', 'SKU-2'], ['a3', 'SKU-3']]);
});

test('an import batch with its batch record: a constraint violation throws WriteFailed, and nothing of the batch is written', async () => {
  const catalogId = newId();
  const write = { mediaRefreshAgeHours: REFRESH_HOURS, waitTurn: holderTakes(catalogId, 'SKU-2'), batchRecord: batchRecord(true) };
  await assert.rejects(writeImportBatchWithRecord(orm.em.fork(), catalogId, batch(), write), (error) => error instanceof WriteFailed && hasSqlState(error, 'unique_violation'));
  assert.deepEqual(await storedItems(catalogId), [['holder', 'SKU-2']]);
});

test('a dry run decides every outcome and writes nothing', async () => {
  const catalogId = newId();
  await upsertItems(orm.em.fork(), catalogId, [item('a1', 'SKU-1')], { mediaRefreshAgeHours: REFRESH_HOURS });
  const entries = await dryRunImportBatch(orm.em.fork(), catalogId, prepared([item('a1', 'SKU-1'), item('a2', 'SKU-1'), item('a3', 'SKU-3')]), {
    waitTurn: async () => false,
  });
  assert.deepEqual(outcomes(entries), ['unchanged', 'error', 'created']);
  assert.deepEqual(await storedItems(catalogId), [['a1', 'SKU-1']]);
});

/** Resolves once a statement of this database waits for a lock another transaction holds. */
async function someoneWaitsForALock(): Promise<void> {
  const deadline = Date.now() + LOCK_WAIT_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (rows[0].n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`no statement waited for a lock within ${LOCK_WAIT_TIMEOUT_MS} ms`);
}

test('a bulk request beside a concurrent SKU holder: its write waits, fails when the holder commits, and only that item is a conflict', async () => {
  const catalogId = newId();
  let commit!: () => void;
  let held!: () => void;
  const committing = new Promise<void>((resolve) => { commit = resolve; });
  const holding = new Promise<void>((resolve) => { held = resolve; });
  const holder = orm.em.fork().transactional(async (tx) => {
    await upsertItems(tx, catalogId, [item('holder', 'SKU-2')], { mediaRefreshAgeHours: REFRESH_HOURS });
    held();
    await committing;
  });
  // The holder's row is written but not committed: the bulk request's lookup cannot see it.
  await holding;
  statementNames.length = 0;
  const bulk = upsertItems(orm.em.fork(), catalogId, [item('b1', 'SKU-1'), item('b2', 'SKU-2'), item('b3', 'SKU-3')], {
    mediaRefreshAgeHours: REFRESH_HOURS, pathPrefix: (index) => `items.${index}.`,
  });
  await someoneWaitsForALock();
  commit();
  await holder;
  const entries = await bulk;
  assert.deepEqual(outcomes(entries), ['created', 'error', 'created']);
  const failed = entries[1]!;
  assert.ok(failed.status === 'error');
  assert.equal(failed.error.code, 'conflict');
  assert.deepEqual(failed.error.details?.map((detail) => detail.path), ['items.1.sku']);
  assert.deepEqual(await storedItems(catalogId), [['b1', 'SKU-1'], ['b3', 'SKU-3'], ['holder', 'SKU-2']]);
  assert.deepEqual(await events(catalogId), [['item.created', 'b1'], ['item.created', 'b3'], ['item.created', 'holder']]);
  // Each statement reports its name: the batch's lookup and write, then each item's alone.
  assert.ok(statementNames.includes('items.write'), statementNames.join(', '));
  assert.ok(statementNames.filter((name) => name.startsWith('items.lookup')).length >= 4, statementNames.join(', '));
});
