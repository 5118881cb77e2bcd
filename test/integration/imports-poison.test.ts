// One poison line never holds up its job nor anyone else's: it becomes that line's error, and a job that keeps failing is parked as failed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { clientOptions } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { allErrors, item, jsonl, runImport } from '../helpers/imports.ts';
import { startImportService } from '../helpers/imports.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const opts = (tenant: Tenant) => clientOptions(service.url, tenant.key);

before(async () => {
  service = await startImportService(FILE);
  sql = await sqlClient(service.databaseUrl);
});
after(async () => {
  await sql?.end();
  await service?.close();
});

test('lines with a NUL or a lone surrogate are line errors; the valid lines around them are stored', async () => {
  const tenant = await service.newTenant();
  const other = await service.newTenant();
  const lines = [
    item('P-1'),
    '{"externalSystem":"erp","externalId":"nul\\u0000id","name":"x"}',
    item('P-2'),
    '{"externalSystem":"erp","externalId":"\\ud800","name":"x"}',
    '{"externalSystem":"erp","externalId":"P-3","name":"ok","metadata":{"k\\u0000":"v"}}',
    item('P-4'),
  ];
  // Another catalog's import runs meanwhile and is not held up by the poison.
  const [job, otherJob] = await Promise.all([
    runImport(opts(tenant), jsonl(lines)),
    runImport(opts(other), jsonl(Array.from({ length: 50 }, (_, i) => item(`O-${i}`)))),
  ]);
  assert.equal(job.status, 'completed_with_errors');
  assert.deepEqual(job.counts, { total: 6, processed: 6, succeeded: 3, failed: 3, unchanged: 0 });
  const errors = await allErrors(opts(tenant), job.id);
  assert.deepEqual(errors.map((e) => [e.lineNumber, e.errorType, e.errorMessage]), [
    [2, 'validation', 'externalId: must not contain the NUL character (U+0000)'],
    [4, 'validation', 'externalId: must be valid Unicode text'],
    [5, 'validation', 'metadata.k\uFFFD: has a key that must not contain the NUL character (U+0000)'],
  ]);
  assert.equal(errors[0]!.externalId, 'nul\uFFFDid', 'the externalId is kept, made storable');
  assert.equal(otherJob.status, 'completed');
  assert.equal(otherJob.counts.succeeded, 50);
  const { rows } = await sql.query('SELECT external_id FROM items WHERE catalog_id = $1 ORDER BY 1', [tenant.catalogId]);
  assert.deepEqual(rows.map((r) => r.external_id), ['P-1', 'P-2', 'P-4']);
});

test('a line the database refuses is that line’s error, not its batch’s', async () => {
  const tenant = await service.newTenant();
  await sql.query(`CREATE FUNCTION refuse_poison_line() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.external_id = 'DB-POISON' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`);
  await sql.query('CREATE TRIGGER refuse_poison_line BEFORE INSERT OR UPDATE ON items FOR EACH ROW EXECUTE FUNCTION refuse_poison_line()');
  try {
    const job = await runImport(opts(tenant), jsonl([item('D-1'), item('DB-POISON'), item('D-2')]));
    assert.equal(job.status, 'completed_with_errors');
    assert.deepEqual(job.counts, { total: 3, processed: 3, succeeded: 2, failed: 1, unchanged: 0 });
    const errors = await allErrors(opts(tenant), job.id);
    assert.deepEqual(errors.map((e) => [e.lineNumber, e.externalId, e.errorType]), [[2, 'DB-POISON', 'database']]);
  } finally {
    await sql.query('DROP TRIGGER refuse_poison_line ON items; DROP FUNCTION refuse_poison_line()');
  }
});

test('a job whose processing keeps failing is parked as failed with a reason, and the consumer goes on', async () => {
  const tenant = await service.newTenant();
  // Every batch of this catalog's jobs fails where no line is to blame: recording its line errors.
  await sql.query(`CREATE FUNCTION refuse_line_errors() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'line errors refused by the test'; END $$`);
  await sql.query('CREATE TRIGGER refuse_line_errors BEFORE INSERT ON import_errors FOR EACH ROW EXECUTE FUNCTION refuse_line_errors()');
  try {
    const job = await runImport(opts(tenant), jsonl([item('K-1'), '{"broken', item('K-2')]));
    assert.equal(job.status, 'failed');
    assert.match(job.failureReason ?? '', /processing failed 3 times in the batch from line 1/);
    const { rows } = await sql.query('SELECT count(*)::int AS n FROM items WHERE catalog_id = $1', [tenant.catalogId]);
    assert.equal(rows[0].n, 0, 'the failing batch wrote nothing');
  } finally {
    await sql.query('DROP TRIGGER refuse_line_errors ON import_errors; DROP FUNCTION refuse_line_errors()');
  }
  // The consumer was not stopped by it: the next job runs to its end.
  const next = await runImport(opts(tenant), jsonl([item('K-3')]));
  assert.equal(next.status, 'completed');
});
