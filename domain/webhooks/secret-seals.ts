// The webhooks' secrets at rest as `catalog secrets` sees them: which key seals each, and re-sealing them with the current key.
import { sealedKeyIdSql } from '../../platform/crypto/secret-box.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import { query } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { previousSecretContext, secretContext } from './signing.ts';

/** How many webhook secrets each key seals (`catalog secrets status`); the key id read by sealedKeyIdSql. */
export async function webhookSecretKeys(db: Db): Promise<Array<{ column: string; keyId: string; values: number }>> {
  const rows = await query<{ col: string; key_id: string; n: string }>(db, 'webhooks.secret_keys',
    `SELECT 'webhooks.secret' AS col, ${sealedKeyIdSql('secret')} AS key_id, count(*) AS n FROM webhooks GROUP BY 2
     UNION ALL
     SELECT 'webhooks.previous_secret', ${sealedKeyIdSql('previous_secret')}, count(*) FROM webhooks WHERE previous_secret IS NOT NULL GROUP BY 2
     ORDER BY 1, 2`);
  return rows.map((r) => ({ column: r.col, keyId: r.key_id, values: Number(r.n) }));
}

/**
 * Re-seals with the current key up to `limit` webhooks' secrets sealed with another, in one
 * transaction (`catalog secrets rotate`); an expired previous secret signs nothing and is dropped
 * instead. Returns how many values changed. The rows stay locked until it commits: a rotation
 * through the API waits, and then writes values of its own.
 */
export async function resealWebhookSecrets(db: Db, secrets: SecretBox, limit: number): Promise<number> {
  return db.transactional(async (tx) => {
    const rows = await query<{ id: string; secret: string; previous_secret: string | null; previous_live: boolean }>(tx, 'webhooks.secrets_to_reseal',
      `SELECT id, secret, previous_secret, previous_secret_expires_at > now() AS previous_live FROM webhooks
        WHERE ${sealedKeyIdSql('secret')} <> $1 OR ${sealedKeyIdSql('previous_secret')} <> $1
        LIMIT $2 FOR UPDATE`, [secrets.currentKeyId, limit]);
    if (rows.length === 0) return 0;
    let changed = 0;
    const reseal = (sealed: string, context: string) => {
      if (secrets.keyIdOf(sealed) === secrets.currentKeyId) return sealed;
      changed += 1;
      return secrets.seal(secrets.open(sealed, context), context);
    };
    const current = rows.map((r) => reseal(r.secret, secretContext(r.id)));
    const previous = rows.map((r) => {
      if (r.previous_secret === null) return null;
      if (r.previous_live) return reseal(r.previous_secret, previousSecretContext(r.id));
      changed += 1;
      return null;
    });
    await query(tx, 'webhooks.reseal_secrets', `UPDATE webhooks w SET secret = v.secret, previous_secret = v.previous_secret
      FROM unnest($1::uuid[], $2::text[], $3::text[]) AS v(id, secret, previous_secret) WHERE w.id = v.id`, [rows.map((r) => r.id), current, previous]);
    return changed;
  });
}
