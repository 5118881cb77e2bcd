// Each import job counts the times its processing failed for a reason a retry cannot fix, so that such a job is parked.
import { Migration } from '@mikro-orm/migrations';

export class ImportProcessingFailures extends Migration {
  override name = '0008-import-processing-failures';

  override up(): void {
    this.addSql('ALTER TABLE import_jobs ADD COLUMN processing_failures integer NOT NULL DEFAULT 0;');
  }

  override down(): void {
    this.addSql('ALTER TABLE import_jobs DROP COLUMN processing_failures;');
  }
}
