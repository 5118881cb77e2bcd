// The item changelog: every item's first record, each item's last change on its row, and items found by the images they name.
import { Migration } from '@mikro-orm/migrations';

const ITEM_JSON = `concat('{"serviceId":', '"', i.id, '"',
      ',"externalSystem":', to_json(i.external_system),
      ',"externalId":', to_json(i.external_id),
      ',"sku":', coalesce(to_json(i.sku)::text, 'null'),
      ',"name":', to_json(i.name),
      ',"description":', coalesce(to_json(i.description)::text, 'null'),
      ',"price":', coalesce(to_json(i.price::float8)::text, 'null'),
      ',"cost":', coalesce(to_json(i.cost::float8)::text, 'null'),
      ',"weight":', coalesce(to_json(i.weight::float8)::text, 'null'),
      ',"gtin13":', coalesce(to_json(i.gtin13)::text, 'null'),
      ',"ncm":', coalesce(to_json(i.ncm)::text, 'null'),
      ',"category":', CASE WHEN i.category_id IS NULL THEN 'null' ELSE concat('{"id":"', i.category_id, '","name":', to_json(c.name), '}') END,
      ',"brand":', CASE WHEN i.brand_id IS NULL THEN 'null' ELSE concat('{"id":"', i.brand_id, '","name":', to_json(b.name), '}') END,
      ',"tags":', to_json(i.tags),
      ',"metadata":', coalesce(i.metadata::text, 'null'),
      ',"trackStock":', i.track_stock::text,
      ',"onHand":', i.on_hand,
      ',"media":', CASE WHEN jsonb_array_length(i.media) = 0 THEN '[]' ELSE (
      SELECT concat('[', string_agg(concat('{"url":', to_json(m.e ->> 'url'), ',"role":', to_json(m.e ->> 'role'),
      ',"sortOrder":', m.e ->> 'sortOrder', ',"sourceUrlHash":', to_json(m.e ->> 'sourceUrlHash'),
      ',"status":', to_json(coalesce(a.status, 'pending')), ',"contentType":', coalesce(to_json(a.content_type)::text, 'null'),
      ',"width":', coalesce(to_json(a.width)::text, 'null'), ',"height":', coalesce(to_json(a.height)::text, 'null'), ',"byteSize":', coalesce(to_json(a.byte_size)::text, 'null'), '}'),
      ',' ORDER BY m.o), ']')
      FROM jsonb_array_elements(i.media) WITH ORDINALITY AS m(e, o)
      LEFT JOIN media_assets a ON a.catalog_id = i.catalog_id AND a.source_url_hash = m.e ->> 'sourceUrlHash') END,
      ',"contentHash":', '"', i.content_hash, '"',
      ',"createdAt":', '"', to_char(i.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '"',
      ',"updatedAt":', '"', to_char(i.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '"', '}')`;

export class ItemChangelog extends Migration {
  override name = '0010-item-changelog';

  override up(): void {
    // Set by the upsert's ON CONFLICT DO UPDATE from the row it replaces, so item.updated
    // reports exactly what that write changed, even when another writer changed it just before.
    this.addSql('ALTER TABLE items ADD COLUMN previous_content_hash text, ADD COLUMN changed_fields text[];');
    // A media state change rewrites the changelog record of every item naming the image; only
    // items with media are indexed, so the many without cost nothing to write.
    this.addSql(`CREATE INDEX items_media_idx ON items USING gin (media jsonb_path_ops)
      WHERE jsonb_array_length(media) > 0;`);
    // The changelog starts with every item's record, so a reader of catalog.items.v1 from the
    // beginning has the items that do not change after the upgrade too. Each record's event-id
    // is a fresh id: no event reports these. The item's JSON as the service wrote it at this
    // version (domain/items/view.ts itemJson), copied: a migration must not change with the code.
    this.addSql(`INSERT INTO outbox (event_id, topic, key, payload)
      SELECT gen_random_uuid(), 'catalog.items.v1',
        '[' || to_json(i.catalog_id::text)::text || ',' || to_json(i.external_system)::text || ',' || to_json(i.external_id)::text || ']',
      ${ITEM_JSON}
      FROM items i LEFT JOIN categories c ON c.id = i.category_id LEFT JOIN brands b ON b.id = i.brand_id
      ORDER BY i.catalog_id, i.id;`);
  }

  override down(): void {
    this.addSql('DROP INDEX items_media_idx;');
    this.addSql('ALTER TABLE items DROP COLUMN previous_content_hash, DROP COLUMN changed_fields;');
    this.addSql("DELETE FROM outbox WHERE topic = 'catalog.items.v1';");
  }
}
