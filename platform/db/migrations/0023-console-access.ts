// Console access: single-use links an operator mints, and the sessions they open, which are expiring rows of api_keys.
import { Migration } from '@mikro-orm/migrations';

export class ConsoleAccess extends Migration {
  override name = '0023-console-access';

  override up(): void {
    // A console session is a key like any other, so every route authenticates it unchanged;
    // it differs by its kind and its end (docs/design.md, "Console access").
    this.addSql(`ALTER TABLE api_keys
      ADD COLUMN kind text NOT NULL DEFAULT 'key' CHECK (kind IN ('key', 'console')),
      ADD COLUMN expires_at timestamptz,
      ADD COLUMN label text;`);
    // Only the SHA-256 of a link's token is stored. A redeemed link's session is the api_keys
    // row with the link's id, so a link, its session and the session's key share one id.
    this.addSql(`CREATE TABLE console_links (
      id uuid PRIMARY KEY,
      catalog_id uuid NOT NULL REFERENCES catalogs (id) ON DELETE CASCADE,
      token_hash text NOT NULL CONSTRAINT console_links_token_hash_key UNIQUE,
      scopes text[] NOT NULL,
      label text,
      session_minutes integer NOT NULL CHECK (session_minutes > 0),
      redeem_by timestamptz NOT NULL,
      redeemed_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    );`);
    this.addSql('CREATE INDEX console_links_catalog_idx ON console_links (catalog_id, created_at, id);');
    this.addSql('CREATE INDEX console_links_created_idx ON console_links (created_at, id);');
  }

  override down(): void {
    this.addSql('DROP TABLE console_links;');
    this.addSql(`DELETE FROM api_keys WHERE kind = 'console';`);
    this.addSql('ALTER TABLE api_keys DROP COLUMN kind, DROP COLUMN expires_at, DROP COLUMN label;');
  }
}
