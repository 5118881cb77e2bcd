// The outbox keeps a catalog's events readable through GET /events: each event row names its catalog, indexed by catalog and event id.
import { Migration } from '@mikro-orm/migrations';

export class EventLog extends Migration {
  override name = '0009-event-log';

  override up(): void {
    this.addSql('ALTER TABLE outbox ADD COLUMN catalog_id uuid;');
    // Work messages (imports, media jobs) have no catalog column: only events are listed.
    this.addSql(`UPDATE outbox SET catalog_id = (payload::jsonb ->> 'catalogId')::uuid WHERE topic = 'catalog.events.v1';`);
    this.addSql('CREATE INDEX outbox_catalog_events_idx ON outbox (catalog_id, event_id) WHERE catalog_id IS NOT NULL;');
  }

  override down(): void {
    this.addSql('DROP INDEX outbox_catalog_events_idx;');
    this.addSql('ALTER TABLE outbox DROP COLUMN catalog_id;');
  }
}
