// API keys with limits: when each was last used, and the client address ranges it may be used from.
import { Migration } from '@mikro-orm/migrations';

export class KeyLimits extends Migration {
  override name = '0026-key-limits';

  override up(): void {
    // Ranges are kept as canonical text (platform/http/client-address.ts checks and matches them in
    // Node, on the row the authentication statement returns); `NULL`: any address.
    this.addSql(`ALTER TABLE api_keys
      ADD COLUMN last_used_at timestamptz,
      ADD COLUMN allowed_cidrs text[] CHECK (cardinality(allowed_cidrs) BETWEEN 1 AND 50);`);
  }

  override down(): void {
    this.addSql('ALTER TABLE api_keys DROP COLUMN last_used_at, DROP COLUMN allowed_cidrs;');
  }
}
