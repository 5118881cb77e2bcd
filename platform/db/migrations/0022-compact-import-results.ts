// Import results kept as a few bytes a line (an outcome code, the item's id) and rendered when read; failed lines stay rendered.
import { Migration } from '@mikro-orm/migrations';

export class CompactImportResults extends Migration {
  override name = '0022-compact-import-results';

  override up(): void {
    this.addSql(`ALTER TABLE import_results DROP CONSTRAINT import_results_check;
      ALTER TABLE import_results RENAME COLUMN known_ids TO ids;
      -- A character a line, in file order from from_offset: c created, u updated, n unchanged
      -- (rendered from the file, ids and changed when read), r rendered already (the next of lines).
      ALTER TABLE import_results ADD COLUMN outcomes text, ADD COLUMN changed jsonb;
      COMMENT ON COLUMN import_results.ids IS 'the item of each line, by position in outcomes; null for a rendered line';
      COMMENT ON COLUMN import_results.changed IS 'the changedFields of each u line, in order';`);
    // Rows written before: a run of stored lines, or lines all rendered.
    this.addSql(`UPDATE import_results SET outcomes = CASE WHEN ids IS NOT NULL THEN repeat('n', cardinality(ids))
      ELSE repeat('r', length(lines) - length(replace(lines, E'\\n', '')) + 1) END;`);
    this.addSql(`ALTER TABLE import_results ALTER COLUMN outcomes SET NOT NULL,
      ADD CONSTRAINT import_results_place_check CHECK (outcomes ~ '^r*$' OR from_offset IS NOT NULL);`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE import_results DROP CONSTRAINT import_results_place_check;
      DELETE FROM import_results WHERE outcomes !~ '^r*$' AND outcomes !~ '^n*$';
      UPDATE import_results SET ids = NULL WHERE outcomes ~ '^r*$';
      ALTER TABLE import_results DROP COLUMN outcomes, DROP COLUMN changed;
      ALTER TABLE import_results RENAME COLUMN ids TO known_ids;
      ALTER TABLE import_results ADD CHECK ((lines IS NULL) <> (known_ids IS NULL));`);
  }
}
