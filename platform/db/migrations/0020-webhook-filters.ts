// Webhook filters: the filter as the subscriber gave it, and the jsonpath predicate the fan-out applies to each event.
import { Migration } from '@mikro-orm/migrations';

export class WebhookFilters extends Migration {
  override name = '0020-webhook-filters';

  override up(): void {
    // The predicate is compiled once, when the filter is set (domain/webhooks/filter.ts).
    this.addSql('ALTER TABLE webhooks ADD COLUMN filter jsonb, ADD COLUMN filter_path jsonpath;');
  }

  override down(): void {
    this.addSql('ALTER TABLE webhooks DROP COLUMN filter, DROP COLUMN filter_path;');
  }
}
