// Each item remembers the import line that last wrote it, so a re-import knows an identical line without parsing it.
import { Migration } from '@mikro-orm/migrations';

export class ImportFingerprints extends Migration {
  override name = '0007-import-fingerprints';

  override up(): void {
    this.addSql(`
-- SHA-256 of the exact import line that last wrote the item (see domain/imports/fingerprint.ts);
-- null once anything else (a single or bulk upsert) wrote it.
ALTER TABLE items ADD COLUMN import_fingerprint bytea;
CREATE INDEX items_import_fingerprint_idx ON items (catalog_id, import_fingerprint) WHERE import_fingerprint IS NOT NULL;
`);
  }

  override down(): void {
    this.addSql('ALTER TABLE items DROP COLUMN import_fingerprint;');
  }
}
