// Ordered delivery per resource: the webhooks that ask for it, and each of their deliveries' resource and place in its order.
import { Migration } from '@mikro-orm/migrations';

export class OrderedWebhooks extends Migration {
  override name = '0021-ordered-webhooks';

  override up(): void {
    this.addSql('ALTER TABLE webhooks ADD COLUMN ordered boolean NOT NULL DEFAULT false;');
    // Set only for an ordered webhook's deliveries: the event's Kafka key (its resource) and its
    // offset, the order its resource's events happened in (one key, one partition).
    this.addSql('ALTER TABLE webhook_deliveries ADD COLUMN resource_key text, ADD COLUMN resource_seq bigint;');
    // The claim's test "an earlier delivery of this resource is still pending"; partial, so
    // unordered deliveries never write to it.
    this.addSql(`CREATE INDEX webhook_deliveries_ordered_idx ON webhook_deliveries (webhook_id, resource_key, resource_seq)
      WHERE status = 'pending' AND resource_key IS NOT NULL;`);
  }

  override down(): void {
    this.addSql('DROP INDEX webhook_deliveries_ordered_idx;');
    this.addSql('ALTER TABLE webhook_deliveries DROP COLUMN resource_key, DROP COLUMN resource_seq;');
    this.addSql('ALTER TABLE webhooks DROP COLUMN ordered;');
  }
}
