// A paced webhook's send pace, apart from its schedule: the claims' own GCRA, so a pace also holds when deliveries fall due late.
import { Migration } from '@mikro-orm/migrations';

export class WebhookSendPaces extends Migration {
  override name = '0030-webhook-send-paces';

  override up(): void {
    this.addSql(`
-- send_at: when the fleet may next send a delivery of the webhook (a GCRA "theoretical arrival
-- time" of the claims, not of the fan-out's slots). Written only by a claim holding the webhook's
-- try-lock: its own table, so claims never wait on the webhooks row that fan-outs and settlements
-- lock.
CREATE TABLE webhook_send_paces (
  webhook_id uuid PRIMARY KEY REFERENCES webhooks (id) ON DELETE CASCADE,
  send_at timestamptz NOT NULL
);
-- The webhooks every claim reads and try-locks: the paced and the capped ones, a few rows.
CREATE INDEX webhooks_limited_idx ON webhooks (id) WHERE rate_per_second IS NOT NULL OR max_in_flight IS NOT NULL;
DROP INDEX webhooks_max_in_flight_idx;
`);
  }

  override down(): void {
    this.addSql(`
CREATE INDEX webhooks_max_in_flight_idx ON webhooks (id) WHERE max_in_flight IS NOT NULL;
DROP INDEX webhooks_limited_idx;
DROP TABLE webhook_send_paces;
`);
  }
}
