// Media assets keep their failure's reason code apart from its message, the renditions made of their image, and the lease of the consumer holding their job.
import { Migration } from '@mikro-orm/migrations';

export class MediaRenditions extends Migration {
  override name = '0012-media-renditions';

  override up(): void {
    this.addSql(`ALTER TABLE media_assets
      ADD COLUMN failure_reason text,
      ADD COLUMN renditions jsonb,
      ADD COLUMN leased_until timestamptz;`);
    // Failures so far were written as "<reason>: <message>"; reasons have no colon.
    this.addSql(`UPDATE media_assets SET failure_reason = split_part(last_error, ':', 1), last_error = ltrim(substr(last_error, strpos(last_error, ':') + 1))
      WHERE last_error LIKE '%:%';`);
    // Renditions are made once per content: another asset with the same bytes reuses them.
    this.addSql('CREATE INDEX media_assets_content_idx ON media_assets (content_sha256) WHERE renditions IS NOT NULL;');
    // The sweeper's scan: only assets whose job a consumer holds have a lease.
    this.addSql('CREATE INDEX media_assets_lease_idx ON media_assets (leased_until) WHERE leased_until IS NOT NULL;');
  }

  override down(): void {
    this.addSql(`UPDATE media_assets SET last_error = failure_reason || ': ' || last_error WHERE failure_reason IS NOT NULL;`);
    this.addSql('DROP INDEX media_assets_content_idx;');
    this.addSql('DROP INDEX media_assets_lease_idx;');
    this.addSql('ALTER TABLE media_assets DROP COLUMN failure_reason, DROP COLUMN renditions, DROP COLUMN leased_until;');
  }
}
