// An import's source address kept whole only sealed, while its job may still fetch it: in plain text with its query values redacted, and found again by ifChanged through its hash.
import { Migration } from '@mikro-orm/migrations';
import type { MigrationObject } from '@mikro-orm/core';
import { columnContext } from '../../crypto/secret-box.ts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { query } from '../sql.ts';
import type { Db } from '../sql.ts';
import { sealingKey } from './sealing-key.ts';

export const SEALED_SOURCE_URL = '0028-sealed-source-url';

// The context the store opens it with (domain/imports/source-store.ts).
const urlOf = (id: string) => columnContext('import_jobs', 'source_url', id);

// The jobs that may still fetch their file: not ended, not fetched yet (a fetch records uploaded_at).
const MAY_FETCH = `source_url IS NOT NULL AND uploaded_at IS NULL AND status NOT IN ('completed', 'completed_with_errors', 'failed', 'cancelled')`;

// As the store's redactedUrl: origin and path (the address up to its `?` or `#`; a stored address
// is a URL's href, without user info), then each query part's value replaced by REDACTED, its
// name kept; a part without `=` is all value; no fragment.
const REDACT = `UPDATE import_jobs SET source_url = substring(source_url from '^[^?#]*') || coalesce('?' || (
    SELECT string_agg(CASE WHEN p = '' THEN '' WHEN strpos(p, '=') > 0 THEN split_part(p, '=', 1) || '=REDACTED' ELSE 'REDACTED' END, '&' ORDER BY n)
    FROM unnest(string_to_array(substring(source_url from '^[^?#]*[?]([^#]*)'), '&')) WITH ORDINALITY AS q(p, n)), '')
  WHERE source_url ~ '[?#]'`;

/**
 * MikroORM makes a migration's instance itself, so the key reaches this one through the closure
 * that makes its class (as 0025-sealed-secrets). Without a box it applies to a database with no
 * job that may still fetch its file, and refuses one that has some, naming what it needs.
 */
export function sealedSourceUrl(secrets: SecretBox | undefined): MigrationObject['class'] {
  const box = sealingKey(secrets, SEALED_SOURCE_URL, (count) => `the source addresses of ${count} import jobs`);

  return class SealedSourceUrl extends Migration {
    override name = SEALED_SOURCE_URL;

    override async up(): Promise<void> {
      const db = this.getEntityManager() as unknown as Db;
      await query(db, 'ALTER TABLE import_jobs ADD COLUMN source_url_sealed text, ADD COLUMN source_url_hash text');
      const jobs = await query<{ id: string; url: string }>(db, `SELECT id, source_url AS url FROM import_jobs WHERE ${MAY_FETCH}`);
      if (jobs.length > 0) {
        const key = box(jobs.length);
        await query(db, 'UPDATE import_jobs j SET source_url_sealed = v.sealed FROM unnest($1::uuid[], $2::text[]) AS v(id, sealed) WHERE j.id = v.id',
          [jobs.map((r) => r.id), jobs.map((r) => key.seal(r.url, urlOf(r.id)))]);
      }
      // Hashed whole before the query is redacted: ifChanged compares full addresses, as it did.
      await query(db, `UPDATE import_jobs SET source_url_hash = encode(sha256(convert_to(source_url, 'UTF8')), 'hex') WHERE source_url IS NOT NULL`);
      await query(db, REDACT);
      // The lookup's `source_url_hash = $2` implies the predicate's IS NOT NULL, so the index serves it.
      await query(db, 'DROP INDEX import_jobs_source_idx');
      await query(db, `CREATE INDEX import_jobs_source_hash_idx ON import_jobs (catalog_id, source_url_hash, finished_at DESC)
        WHERE source_url_hash IS NOT NULL AND status IN ('completed', 'completed_with_errors')`);
    }

    // A job that may still fetch gets its full address back; the others keep theirs redacted, their query values gone.
    override async down(): Promise<void> {
      const db = this.getEntityManager() as unknown as Db;
      const jobs = await query<{ id: string; sealed: string }>(db, 'SELECT id, source_url_sealed AS sealed FROM import_jobs WHERE source_url_sealed IS NOT NULL');
      if (jobs.length > 0) {
        const key = box(jobs.length);
        await query(db, 'UPDATE import_jobs j SET source_url = v.url FROM unnest($1::uuid[], $2::text[]) AS v(id, url) WHERE j.id = v.id',
          [jobs.map((r) => r.id), jobs.map((r) => key.open(r.sealed, urlOf(r.id)))]);
      }
      await query(db, 'DROP INDEX import_jobs_source_hash_idx');
      await query(db, `CREATE INDEX import_jobs_source_idx ON import_jobs (catalog_id, source_url, finished_at DESC)
        WHERE source_url IS NOT NULL AND status IN ('completed', 'completed_with_errors')`);
      await query(db, 'ALTER TABLE import_jobs DROP COLUMN source_url_sealed, DROP COLUMN source_url_hash');
    }
  };
}
