// The rate limit counts a key's concurrent requests in one statement: it reports how many it admitted.
import { Migration } from '@mikro-orm/migrations';

export class RateLimitGroups extends Migration {
  override name = '0006-rate-limit-groups';

  override up(): void {
    this.addSql(`
-- How many requests the latest statement admitted (one statement counts a key's concurrent
-- requests together), in place of whether the one request it counted was admitted.
ALTER TABLE rate_limits DROP COLUMN allowed;
ALTER TABLE rate_limits ADD COLUMN admitted integer NOT NULL DEFAULT 1;
`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE rate_limits DROP COLUMN admitted;
ALTER TABLE rate_limits ADD COLUMN allowed boolean NOT NULL DEFAULT true;`);
  }
}
