// The outbox in lanes (docs/design.md, "The outbox"): relays publish different lanes side by side; rows from before lanes form a lane of their own, published first.
import { Migration } from '@mikro-orm/migrations';

export class OutboxLanes extends Migration {
  override name = '0017-outbox-lanes';

  override up(): void {
    // A constant default fills the existing rows without rewriting the table; later rows name their lane.
    this.addSql('ALTER TABLE outbox ADD COLUMN lane smallint NOT NULL DEFAULT -1;');
    this.addSql('ALTER TABLE outbox ALTER COLUMN lane DROP DEFAULT;');
    this.addSql('DROP INDEX outbox_unsent_idx;');
    this.addSql('CREATE INDEX outbox_unsent_idx ON outbox (lane, id) WHERE sent_at IS NULL;');
  }

  override down(): void {
    this.addSql('DROP INDEX outbox_unsent_idx;');
    this.addSql('ALTER TABLE outbox DROP COLUMN lane;');
    this.addSql('CREATE INDEX outbox_unsent_idx ON outbox (id) WHERE sent_at IS NULL;');
  }
}
