// Bulk imports: retry jobs without an upload window, and the indexes the import routes walk.
import { Migration } from '@mikro-orm/migrations';

export class Imports extends Migration {
  override name = '0004-imports';

  override up(): void {
    this.addSql(`
-- A retry job is built by the service from the failed lines of another job: it has no upload window.
ALTER TABLE import_jobs ALTER COLUMN upload_expires_at DROP NOT NULL;
-- The signed upload route finds its job by the path it was signed for.
CREATE UNIQUE INDEX import_jobs_storage_path_key ON import_jobs (storage_path);
-- The sweeper cancels jobs whose upload window lapsed without a file.
CREATE INDEX import_jobs_upload_window_idx ON import_jobs (upload_expires_at) WHERE status = 'awaiting_upload';
-- listImports with a status filter.
CREATE INDEX import_jobs_catalog_status_idx ON import_jobs (catalog_id, status, created_at DESC, id DESC);
`);
  }

  override down(): void {
    this.addSql(`DROP INDEX IF EXISTS import_jobs_catalog_status_idx, import_jobs_upload_window_idx, import_jobs_storage_path_key;
ALTER TABLE import_jobs ALTER COLUMN upload_expires_at SET NOT NULL;`);
  }
}
