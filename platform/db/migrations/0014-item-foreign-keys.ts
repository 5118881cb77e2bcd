// Items keep their catalog, category and brand ids without foreign-key checks: the upsert path writes them from rows it has just read or made, and nothing deletes those rows.
import { Migration } from '@mikro-orm/migrations';

export class ItemForeignKeys extends Migration {
  override name = '0014-item-foreign-keys';

  override up(): void {
    // Each check is a query of its own per item written: a fifth of Postgres's CPU in a fresh
    // import's upsert (bench/results/2026-11-24-targets-part-by-part.md). Catalogs, categories and brands are never
    // deleted, and the upsert takes an item's category and brand ids from the rows it looked up
    // or inserted in the same transaction, so the checks guarded against nothing the service does.
    this.addSql(`ALTER TABLE items
      DROP CONSTRAINT items_catalog_id_fkey,
      DROP CONSTRAINT items_category_id_fkey,
      DROP CONSTRAINT items_brand_id_fkey;`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE items
      ADD CONSTRAINT items_catalog_id_fkey FOREIGN KEY (catalog_id) REFERENCES catalogs(id) ON DELETE CASCADE,
      ADD CONSTRAINT items_category_id_fkey FOREIGN KEY (category_id) REFERENCES categories(id),
      ADD CONSTRAINT items_brand_id_fkey FOREIGN KEY (brand_id) REFERENCES brands(id);`);
  }
}
