// Upgrading a database with import source addresses in plain text: migration 0028 redacts their query values, hashes them for ifChanged, seals the address of a job that may still fetch it, and its down migration gives that one back.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { lastValidators, redactedUrl, sourceAddress } from '../../domain/imports/source-store.ts';
import { createSecretBox, secretKey } from '../../platform/crypto/secret-box.ts';
import { newId } from '../../platform/ids.ts';
import { openDatabase } from '../../platform/db/orm.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { createLogger } from '../../platform/log/logger.ts';
import { dropDatabase, freshDatabase, sqlClient } from '../helpers/database.ts';

const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn');
const key = secretKey(randomBytes(32));
const box = createSecretBox({ current: key });
const BEFORE = '0027-audit-log';
let databaseUrl: string;
let orm: Orm;
let db: pg.Client;

before(async () => {
  databaseUrl = await freshDatabase(import.meta.url);
  // The schema as it was before: every migration up to 0027.
  orm = await openDatabase({ databaseUrl, logger, migrate: false, secrets: box });
  await orm.migrator.up({ to: BEFORE });
  db = await sqlClient(databaseUrl);
});
after(async () => {
  await db?.end();
  await orm?.close();
  if (databaseUrl) await dropDatabase(databaseUrl);
});

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const presigned = (path: string) =>
  `https://bucket.s3.amazonaws.com/${path}?X-Amz-Credential=AKIA${randomBytes(8).toString('hex').toUpperCase()}%2F20260101&X-Amz-Signature=${randomBytes(32).toString('hex')}&download`;

test('the upgrade redacts and hashes every source address, seals the one a job may still fetch; ifChanged finds the last job; a downgrade opens it again', async () => {
  const [catalogId, running, fetched, done, plain, uploaded] = [newId(), newId(), newId(), newId(), newId(), newId()];
  const urls: Record<string, string | null> = {
    [running]: presigned('running.jsonl'), [fetched]: presigned('fetched.jsonl'), [done]: presigned('done.jsonl'),
    [plain]: 'https://erp.example/feed.jsonl', [uploaded]: null,
  };
  await db.query(`INSERT INTO catalogs (id, name, owner_email) VALUES ($1, $2, 'ops@example.com')`, [catalogId, `upgrade-${catalogId}`]);
  // Queued: not fetched yet; processing: fetched; completed: fetched and finished, with the ETag its source answered.
  const jobs: Array<[string, string, string | null]> = [
    [running, 'queued', null], [fetched, 'processing', null], [done, 'completed', '"v1"'], [plain, 'completed', '"v2"'], [uploaded, 'completed', null],
  ];
  for (const [id, status, etag] of jobs) {
    await db.query(`INSERT INTO import_jobs (id, catalog_id, status, file_size_bytes, storage_path, source_url, uploaded_at, finished_at, source_etag)
      VALUES ($1, $2, $3, 0, $4, $5, CASE WHEN $6::boolean THEN now() END, CASE WHEN $7::boolean THEN now() END, $8)`,
    [id, catalogId, status, `imports/${id}.jsonl`, urls[id], status !== 'queued', status === 'completed', etag]);
  }

  // Without the key, the upgrade refuses a database with a job that may still fetch, and leaves it as it was.
  const keyless = await openDatabase({ databaseUrl, logger, migrate: false });
  try {
    await assert.rejects(keyless.migrator.up(), /0028-sealed-source-url must seal or open the source addresses of 1 import jobs, and needs the secrets key/);
  } finally {
    await keyless.close();
  }
  assert.deepEqual((await db.query('SELECT source_url FROM import_jobs WHERE id = $1', [running])).rows, [{ source_url: urls[running] }]);

  await orm.migrator.up();
  const { rows } = await db.query('SELECT id, source_url, source_url_sealed, source_url_hash FROM import_jobs WHERE catalog_id = $1', [catalogId]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const [id, url] of Object.entries(urls)) {
    const row = byId.get(id)!;
    assert.equal(row.source_url, url === null ? null : redactedUrl(new URL(url)), id);
    assert.equal(row.source_url_hash, url === null ? null : sha256(url), id);
    if (id === running) assert.match(row.source_url_sealed, new RegExp(`^v1\\.${key.id}\\.`));
    else assert.equal(row.source_url_sealed, null, id);
  }
  assert.equal(byId.get(done)!.source_url, 'https://bucket.s3.amazonaws.com/done.jsonl?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&REDACTED');
  assert.equal(byId.get(plain)!.source_url, urls[plain]);
  assert.equal((await sourceAddress(orm.em.fork(), box, running))?.href, urls[running]);
  assert.deepEqual(await lastValidators(orm.em.fork(), catalogId, new URL(urls[done]!)), { etag: '"v1"', lastModified: null });
  assert.deepEqual(await lastValidators(orm.em.fork(), catalogId, new URL(redactedUrl(new URL(urls[done]!)))), undefined, 'found by the full address only');
  const indexes = async () => (await db.query(`SELECT indexname FROM pg_indexes WHERE tablename = 'import_jobs' AND indexname LIKE 'import_jobs_source%'`)).rows;
  assert.deepEqual(await indexes(), [{ indexname: 'import_jobs_source_hash_idx' }]);

  await orm.migrator.down({ to: BEFORE });
  const { rows: back } = await db.query('SELECT id, source_url FROM import_jobs WHERE id = ANY($1::uuid[])', [[running, done]]);
  assert.deepEqual(new Map(back.map((r) => [r.id, r.source_url])), new Map([[running, urls[running]], [done, redactedUrl(new URL(urls[done]!))]]));
  assert.deepEqual(await indexes(), [{ indexname: 'import_jobs_source_idx' }]);
  await orm.migrator.up();
});
