// Item versions: each write a caller makes to an item, with the previous values it replaced and where it came from.
import { Migration } from '@mikro-orm/migrations';

export class ItemVersions extends Migration {
  override name = '0019-item-versions';

  override up(): void {
    // The item's last version number, counted under its row lock, and the previous values of the
    // fields its last update changed (set by the upsert's ON CONFLICT DO UPDATE from the row it
    // replaces, as changed_fields): item.updated's previousAttributes and its version's.
    this.addSql('ALTER TABLE items ADD COLUMN version integer NOT NULL DEFAULT 0, ADD COLUMN previous_values jsonb;');
    // Keyed by identity, not by item id: the versions of an item outlive its delete, and a
    // re-created item goes on from its last number. No foreign key to catalogs: its check would
    // cost every row of a bulk write a trigger call, and the written item's row already holds it.
    this.addSql(`CREATE TABLE item_versions (
      catalog_id uuid NOT NULL,
      external_system text NOT NULL,
      external_id text NOT NULL,
      version integer NOT NULL,
      item_id uuid NOT NULL,
      -- created, updated, deleted or stock.
      kind text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      content_hash text,
      changed_fields text[],
      -- The changed fields' values before this version (the whole item for a delete).
      previous jsonb,
      -- The item as GET answered it after this version, JSON text as the event carried it; NULL for a delete.
      item text,
      source jsonb,
      event_id uuid,
      PRIMARY KEY (catalog_id, external_system, external_id, version)
    );`);
    // Rows arrive in time order: a BRIN index finds the expired ones for the purge at almost no write cost.
    this.addSql('CREATE INDEX item_versions_created_idx ON item_versions USING brin (created_at);');
  }

  override down(): void {
    this.addSql('DROP TABLE item_versions;');
    this.addSql('ALTER TABLE items DROP COLUMN version, DROP COLUMN previous_values;');
  }
}
