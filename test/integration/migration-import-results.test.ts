// Upgrading a database with import results: migration 0022 keeps every stored row readable (rendered lines, runs of stored lines) in the compact form, and its down migration gives them back as they were.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { newId } from '../../platform/ids.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { dropDatabase, freshDatabase, sqlClient } from '../helpers/database.ts';

const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn');
let databaseUrl: string;
let orm: Orm;
let db: pg.Client;

before(async () => {
  databaseUrl = await freshDatabase(import.meta.url);
  // The schema as it was before: every migration up to 0021.
  orm = await openDatabase({ databaseUrl, logger, migrate: false });
  await orm.migrator.up({ to: '0021-ordered-webhooks' });
  db = await sqlClient(databaseUrl);
});
after(async () => {
  await db?.end();
  await orm?.close();
  if (databaseUrl) await dropDatabase(databaseUrl);
});

const ROWS = 'SELECT first_line, from_offset, outcomes, ids, changed, lines FROM import_results ORDER BY first_line';

test('results stored before the upgrade read the same after it, and after a downgrade', async () => {
  const [catalogId, jobId] = [newId(), newId()];
  const [a, b, c] = [newId(), newId(), newId()];
  const rendered = ['{"lineNumber":1,"status":"created","externalSystem":"erp","externalId":"A"}',
    '{"lineNumber":3,"status":"failed","externalId":"B","errorType":"validation","errorMessage":"price: must be a number"}'].join('\n');
  await db.query(`INSERT INTO catalogs (id, name, owner_email) VALUES ($1, $2, 'ops@example.com')`, [catalogId, `upgrade-${catalogId}`]);
  await db.query(`INSERT INTO import_jobs (id, catalog_id, status, file_size_bytes, storage_path, upload_expires_at)
    VALUES ($1, $2, 'completed', 100, $3, now())`, [jobId, catalogId, `imports/${jobId}.jsonl`]);
  await db.query('INSERT INTO import_results (job_id, first_line, lines) VALUES ($1, 1, $2)', [jobId, rendered]);
  await db.query('INSERT INTO import_results (job_id, first_line, from_offset, known_ids) VALUES ($1, 4, 321, $2)', [jobId, [a, b, c]]);

  await orm.migrator.up();
  const upgraded = (await db.query(ROWS)).rows;
  assert.deepEqual(upgraded, [
    { first_line: 1, from_offset: null, outcomes: 'rr', ids: null, changed: null, lines: rendered },
    { first_line: 4, from_offset: '321', outcomes: 'nnn', ids: [a, b, c], changed: null, lines: null },
  ]);
  // A row of the compact form needs the place of its lines in the file.
  await assert.rejects(db.query(`INSERT INTO import_results (job_id, first_line, outcomes, ids) VALUES ($1, 9, 'c', $2)`, [jobId, [a]]),
    /import_results_place_check/);

  await orm.migrator.down({ to: '0021-ordered-webhooks' });
  const { rows } = await db.query('SELECT first_line, from_offset, known_ids, lines FROM import_results ORDER BY first_line');
  assert.deepEqual(rows, [
    { first_line: 1, from_offset: null, known_ids: null, lines: rendered },
    { first_line: 4, from_offset: '321', known_ids: [a, b, c], lines: null },
  ]);
  await orm.migrator.up();
  assert.deepEqual((await db.query(ROWS)).rows, upgraded);
});
