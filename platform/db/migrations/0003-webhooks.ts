// Webhooks: the owner address per webhook, delivery leases, the disable notice marker, an index for failures.
import { Migration } from '@mikro-orm/migrations';

export class Webhooks extends Migration {
  override name = '0003-webhooks';

  override up(): void {
    this.addSql(`
-- Who is e-mailed when the webhook is disabled; NULL means the catalog owner.
ALTER TABLE webhooks ADD COLUMN owner_email text;
-- Set once the disable notice went out, so a crash between disabling and mailing re-sends it
-- and a second worker never sends it twice; resume clears it.
ALTER TABLE webhooks ADD COLUMN disabled_notice_sent_at timestamptz;

-- A claimed delivery carries the claim's token and next_attempt_at = the lease's end: if the
-- worker dies mid-attempt, the row simply becomes due again. Completions only apply when the
-- token still matches, so a manual retry (which clears it) is never overwritten.
ALTER TABLE webhook_deliveries ADD COLUMN lease_token uuid;

-- A queue table: every delivery is inserted, claimed and settled within seconds. Vacuum and
-- analyze it far more often than the defaults (20 % / 10 % of the table) so dead versions do not
-- pile up in the due index and the claim keeps its plan as the table grows.
ALTER TABLE webhook_deliveries SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000, autovacuum_analyze_threshold = 1000);

-- listWebhookDeliveries?status=exhausted and recoverWebhook find the few failures among many
-- successes; partial, so the delivery hot path (pending → succeeded) never writes to it.
CREATE INDEX webhook_deliveries_exhausted_idx ON webhook_deliveries (webhook_id, created_at DESC, id DESC)
  WHERE status = 'exhausted';
`);
  }

  override down(): void {
    this.addSql(`
DROP INDEX IF EXISTS webhook_deliveries_exhausted_idx;
ALTER TABLE webhook_deliveries RESET (autovacuum_vacuum_scale_factor, autovacuum_analyze_scale_factor,
  autovacuum_vacuum_threshold, autovacuum_analyze_threshold);
ALTER TABLE webhook_deliveries DROP COLUMN IF EXISTS lease_token;
ALTER TABLE webhooks DROP COLUMN IF EXISTS disabled_notice_sent_at;
ALTER TABLE webhooks DROP COLUMN IF EXISTS owner_email;
`);
  }
}
