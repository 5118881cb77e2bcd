// A webhook's health beside its failure count: when a delivery to it last succeeded.
import { Migration } from '@mikro-orm/migrations';

export class WebhookLastSuccess extends Migration {
  override name = '0024-webhook-last-success';

  override up(): void {
    this.addSql('ALTER TABLE webhooks ADD COLUMN last_success_at timestamptz;');
  }

  override down(): void {
    this.addSql('ALTER TABLE webhooks DROP COLUMN last_success_at;');
  }
}
