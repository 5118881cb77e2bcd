// The rate limit as one plain statement on an unlogged table, in place of two PL/pgSQL functions.
import { Migration } from '@mikro-orm/migrations';
import { AUTHENTICATE_REQUEST, RATE_LIMIT_HIT } from './0001-initial-schema.ts';

export class RateLimitStatement extends Migration {
  override name = '0005-rate-limit-statement';

  override up(): void {
    this.addSql(`
-- Every request rewrites its key's counter row. Unlogged, the table writes no WAL, so those commits
-- never wait for a flush (the functions used to turn synchronous_commit off for this). A crash
-- empties it and forgives at most a minute of counts, which a rate limit can afford.
ALTER TABLE rate_limits SET UNLOGGED;
-- Whether the latest request was admitted, for the statement that counts it to report.
ALTER TABLE rate_limits ADD COLUMN allowed boolean NOT NULL DEFAULT true;
DROP FUNCTION authenticate_request(text, double precision);
DROP FUNCTION rate_limit_hit(text, integer, double precision);
`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE rate_limits DROP COLUMN allowed;
ALTER TABLE rate_limits SET LOGGED;`);
    this.addSql(RATE_LIMIT_HIT);
    this.addSql(AUTHENTICATE_REQUEST);
  }
}
