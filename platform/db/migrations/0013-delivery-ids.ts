// Webhook deliveries made in bulk by the fan-out get UUIDv7 ids like every other id of the service, from a SQL function.
import { Migration } from '@mikro-orm/migrations';

export class DeliveryIds extends Migration {
  override name = '0013-delivery-ids';

  override up(): void {
    // RFC 9562 UUIDv7: the first 48 bits are the Unix time in ms, then the version (7) and the
    // variant over random bits: a random UUIDv4 with its first six bytes replaced by the time and
    // its version bits 0100 turned into 0111 (set_bit counts each byte's bits from the lowest).
    this.addSql(`CREATE FUNCTION catalog_uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
      SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
    $$;`);
  }

  override down(): void {
    this.addSql('DROP FUNCTION catalog_uuid_v7();');
  }
}
