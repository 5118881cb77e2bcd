// The item changelog: an event's item record beside it in the outbox, each item's last change on its row, and items found by the images they name.
import { Migration } from '@mikro-orm/migrations';

export class ItemChangelog extends Migration {
  override name = '0010-item-changelog';

  override up(): void {
    // An item event's row also carries the item's record on catalog.items.v1 (the relay
    // publishes both): one row per change, not two.
    this.addSql('ALTER TABLE outbox ADD COLUMN item_record text;');
    // Set by the upsert's ON CONFLICT DO UPDATE from the row it replaces, so item.updated
    // reports exactly what that write changed, even when another writer changed it just before.
    this.addSql('ALTER TABLE items ADD COLUMN previous_content_hash text, ADD COLUMN changed_fields text[];');
    // A media state change rewrites the changelog record of every item naming the image; only
    // items with media are indexed, so the many without cost nothing to write.
    this.addSql(`CREATE INDEX items_media_idx ON items USING gin (media jsonb_path_ops)
      WHERE jsonb_array_length(media) > 0;`);
  }

  override down(): void {
    this.addSql('DROP INDEX items_media_idx;');
    this.addSql('ALTER TABLE items DROP COLUMN previous_content_hash, DROP COLUMN changed_fields;');
    this.addSql('ALTER TABLE outbox DROP COLUMN item_record;');
  }
}
