// Every import line's outcome, kept with its job: a row a batch, its lines rendered as the results file's JSONL.
import { Migration } from '@mikro-orm/migrations';

export class ImportResults extends Migration {
  override name = '0016-import-results';

  override up(): void {
    this.addSql(`CREATE TABLE import_results (
      job_id uuid NOT NULL REFERENCES import_jobs (id) ON DELETE CASCADE,
      -- The batch's first line; a batch is recorded once, with its counters and cursor.
      first_line int NOT NULL,
      -- One JSON object a line, LF between them, in line order.
      lines text NOT NULL,
      PRIMARY KEY (job_id, first_line)
    );`);
    // A batch's lines are compressed when stored: lz4 for a fraction of pglz's CPU, as the outbox's payloads.
    this.addSql(`DO $$ BEGIN ALTER TABLE import_results ALTER COLUMN lines SET COMPRESSION lz4;
      EXCEPTION WHEN feature_not_supported THEN NULL; END $$;`);
  }

  override down(): void {
    this.addSql('DROP TABLE import_results;');
  }
}
