// The audit log: one row per administrative action, written in the action's own transaction (domain/audit/audit-log.ts).
import { Migration } from '@mikro-orm/migrations';

export class AuditLog extends Migration {
  override name = '0027-audit-log';

  override up(): void {
    // The actor's key is kept by id without a foreign key: its prefix and label are joined when
    // read, and an entry outlives nothing it names. `at` is the transaction's time.
    this.addSql(`CREATE TABLE audit_log (
      id uuid PRIMARY KEY,
      catalog_id uuid NOT NULL REFERENCES catalogs (id),
      at timestamptz NOT NULL DEFAULT now(),
      action text NOT NULL,
      actor_kind text NOT NULL CHECK (actor_kind IN ('key', 'console', 'cli', 'service')),
      actor_key_id uuid,
      operator text,
      request_id text,
      client_address text,
      resource_type text NOT NULL,
      resource_id text NOT NULL,
      before jsonb,
      after jsonb
    );`);
    // Newest first per catalog (the list), per resource (its history), and by age (the purge).
    this.addSql('CREATE INDEX audit_log_catalog_at ON audit_log (catalog_id, at DESC, id DESC);');
    this.addSql('CREATE INDEX audit_log_resource ON audit_log (catalog_id, resource_type, resource_id, at DESC, id DESC);');
    this.addSql('CREATE INDEX audit_log_at ON audit_log (at);');
  }

  override down(): void {
    this.addSql('DROP TABLE audit_log;');
  }
}
