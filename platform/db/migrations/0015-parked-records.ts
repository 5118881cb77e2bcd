// Records the broker refuses for good (too large, invalid) are set aside here, each whole, so the relay goes on with the others.
import { Migration } from '@mikro-orm/migrations';

export class ParkedRecords extends Migration {
  override name = '0015-parked-records';

  override up(): void {
    this.addSql(`CREATE TABLE outbox_parked (
      id uuid PRIMARY KEY,
      -- The record as the outbox held it: re-sending appends it to the outbox again, unchanged.
      event_id uuid NOT NULL,
      topic text NOT NULL,
      key text NOT NULL,
      payload text NOT NULL,
      type text,
      catalog_id uuid,
      -- The broker's answer, in words, and its error code name (MESSAGE_TOO_LARGE, INVALID_RECORD…).
      reason text NOT NULL,
      error_type text NOT NULL,
      byte_size int NOT NULL,
      parked_at timestamptz NOT NULL DEFAULT now(),
      resent_at timestamptz
    );`);
    this.addSql('CREATE INDEX outbox_parked_waiting_idx ON outbox_parked (parked_at, id) WHERE resent_at IS NULL;');
  }

  override down(): void {
    this.addSql('DROP TABLE outbox_parked;');
  }
}
