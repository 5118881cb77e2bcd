// The W3C trace context of the request that caused a change travels with its outbox records and webhook deliveries.
import { Migration } from '@mikro-orm/migrations';

export class TraceContext extends Migration {
  override name = '0016-trace-context';

  override up(): void {
    // Parallel to the row's records, as event_ids, or one shared by all of them; NULL when none
    // of them was traced (traces off).
    this.addSql('ALTER TABLE outbox ADD COLUMN traceparents text[];');
    this.addSql('ALTER TABLE webhook_deliveries ADD COLUMN traceparent text;');
  }

  override down(): void {
    this.addSql('ALTER TABLE outbox DROP COLUMN traceparents;');
    this.addSql('ALTER TABLE webhook_deliveries DROP COLUMN traceparent;');
  }
}
