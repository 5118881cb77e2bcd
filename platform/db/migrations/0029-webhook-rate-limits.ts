// A webhook's own delivery pace (a rate and a cap on attempts in flight), the pause its receiver's 429 asks for, throttled attempts, and the indexes that count its backlog and its leases.
import { Migration } from '@mikro-orm/migrations';

export class WebhookRateLimits extends Migration {
  override name = '0029-webhook-rate-limits';

  override up(): void {
    this.addSql(`
-- pace_at: the next free send slot of a paced webhook (a GCRA "theoretical arrival time"); the
-- fan-out takes slots from it under the row's lock, so two processes never share one.
-- paused_until: no delivery is sent before it (a 429); consecutive_429 grows the pause when the
-- receiver names no Retry-After, and a success zeroes it.
ALTER TABLE webhooks ADD COLUMN rate_per_second double precision, ADD COLUMN max_in_flight int,
  ADD COLUMN pace_at timestamptz, ADD COLUMN paused_until timestamptz,
  ADD COLUMN consecutive_429 int NOT NULL DEFAULT 0;
-- The claim reads the paused webhooks and the capped ones every time: a few rows, never a scan.
-- An attempt the receiver answered 429: logged, but not one of the ladder's attempts.
ALTER TABLE webhook_attempts ADD COLUMN throttled boolean NOT NULL DEFAULT false;
CREATE INDEX webhooks_paused_idx ON webhooks (paused_until) WHERE paused_until IS NOT NULL;
CREATE INDEX webhooks_max_in_flight_idx ON webhooks (id) WHERE max_in_flight IS NOT NULL;
-- The webhook's backlog (count and oldest) without reading its delivered history.
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (webhook_id, created_at) WHERE status = 'pending';
-- A capped webhook's live leases, counted by every claim; only deliveries being attempted are in it.
CREATE INDEX webhook_deliveries_leased_idx ON webhook_deliveries (webhook_id, next_attempt_at)
  WHERE status = 'pending' AND lease_token IS NOT NULL;
`);
  }

  override down(): void {
    this.addSql(`
DROP INDEX webhook_deliveries_leased_idx, webhook_deliveries_pending_idx, webhooks_max_in_flight_idx, webhooks_paused_idx;
ALTER TABLE webhook_attempts DROP COLUMN throttled;
ALTER TABLE webhooks DROP COLUMN rate_per_second, DROP COLUMN max_in_flight, DROP COLUMN pace_at,
  DROP COLUMN paused_until, DROP COLUMN consecutive_429;
`);
  }
}
