// Every import line's outcome, kept with its job (a row a batch, its lines rendered as the results file's JSONL); jobs that fetch their file from an address.
import { Migration } from '@mikro-orm/migrations';

export class ImportResults extends Migration {
  override name = '0018-import-results';

  override up(): void {
    this.addSql(`CREATE TABLE import_results (
      job_id uuid NOT NULL REFERENCES import_jobs (id) ON DELETE CASCADE,
      -- The batch's first line; a batch is recorded once, with its counters and cursor.
      first_line int NOT NULL,
      -- One JSON object a line, LF between them, in line order.
      lines text,
      -- Or a run of lines proved stored by their fingerprint (a re-import), kept small: the ids of
      -- their items in line order, the lines themselves read again from the job's file at this
      -- byte offset when the results are read.
      from_offset bigint,
      known_ids uuid[],
      CHECK ((lines IS NULL) <> (known_ids IS NULL)),
      PRIMARY KEY (job_id, first_line)
    );`);
    this.addSql(`ALTER TABLE import_jobs
      -- The address the service fetches the file from, instead of an upload.
      ADD COLUMN source_url text,
      -- The caller's request headers for it (credentials): never shown back, dropped once fetched.
      ADD COLUMN source_headers jsonb,
      ADD COLUMN source_if_changed boolean NOT NULL DEFAULT false,
      -- The validators the source answered, compared by the next job of the same address with ifChanged.
      ADD COLUMN source_etag text,
      ADD COLUMN source_last_modified text,
      -- The source answered as the last completed job's: the job completed without reading it.
      ADD COLUMN source_unchanged boolean NOT NULL DEFAULT false;`);
    this.addSql(`CREATE INDEX import_jobs_source_idx ON import_jobs (catalog_id, source_url, finished_at DESC)
      WHERE source_url IS NOT NULL AND status IN ('completed', 'completed_with_errors');`);
    // A batch's lines are compressed when stored: lz4 for a fraction of pglz's CPU, as the outbox's payloads.
    this.addSql(`DO $$ BEGIN ALTER TABLE import_results ALTER COLUMN lines SET COMPRESSION lz4;
      EXCEPTION WHEN feature_not_supported THEN NULL; END $$;`);
  }

  override down(): void {
    this.addSql('DROP TABLE import_results;');
    this.addSql(`DROP INDEX import_jobs_source_idx;
      ALTER TABLE import_jobs DROP COLUMN source_url, DROP COLUMN source_headers, DROP COLUMN source_if_changed,
      DROP COLUMN source_etag, DROP COLUMN source_last_modified, DROP COLUMN source_unchanged;`);
  }
}
