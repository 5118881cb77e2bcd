// Webhooks disabled by the service after their exhausted deliveries, each with its audit entry, and their owners told once.
import { query } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { isoTime } from '../items/view.ts';

/**
 * Applies each webhook's run of consecutive exhausted deliveries (`reset`: a success started it
 * again at `add`) and disables the active ones whose count reaches `disableAfter`, each with its
 * audit entry; returns those.
 */
export async function countExhausted(
  db: Db, runs: ReadonlyMap<string, { reset: boolean; add: number }>, disableAfter: number,
): Promise<string[]> {
  const ids = [...runs.keys()];
  const rows = await query<{ id: string; just_disabled: boolean }>(db,
    `WITH v AS (SELECT * FROM unnest($1::uuid[], $2::boolean[], $3::int[]) AS v(id, reset, add)), changed AS (
     UPDATE webhooks w
        SET consecutive_failures = CASE WHEN v.reset THEN v.add ELSE w.consecutive_failures + v.add END,
            status = CASE WHEN w.status = 'active' AND (CASE WHEN v.reset THEN v.add ELSE w.consecutive_failures + v.add END) >= $4
                          THEN 'disabled' ELSE w.status END,
            disabled_at = CASE WHEN w.status = 'active' AND (CASE WHEN v.reset THEN v.add ELSE w.consecutive_failures + v.add END) >= $4
                               THEN now() ELSE w.disabled_at END,
            updated_at = now()
       FROM v
      -- A success on a webhook whose counter is already 0 writes nothing.
      WHERE w.id = v.id AND (v.add > 0 OR w.consecutive_failures <> 0)
      RETURNING w.id, w.catalog_id, w.consecutive_failures, w.disabled_at, (w.status = 'disabled' AND w.disabled_at = now()) AS just_disabled
     ), audited AS (
       -- The service's own change, in the audit log with the statement that made it.
       INSERT INTO audit_log (id, catalog_id, action, actor_kind, resource_type, resource_id, before, after)
       SELECT gen_random_uuid(), catalog_id, 'webhook.disabled', 'service', 'webhook', id::text,
              jsonb_build_object('status', 'active'),
              jsonb_build_object('status', 'disabled', 'consecutiveFailures', consecutive_failures,
                'disabledAt', ${isoTime('disabled_at')})
         FROM changed WHERE just_disabled
     )
     SELECT id, just_disabled FROM changed`,
    [ids, ids.map((id) => runs.get(id)!.reset), ids.map((id) => runs.get(id)!.add), disableAfter]);
  return rows.filter((r) => r.just_disabled).map((r) => r.id);
}

export interface DisableNotice {
  readonly webhookId: string;
  readonly url: string;
  readonly catalogId: string;
  readonly catalogName: string;
  readonly recipient: string;
  readonly consecutiveFailures: number;
  readonly disabledAt: Date;
}

/** Locks one disabled webhook whose owner was not told yet (inside the caller's transaction). */
export async function lockPendingNotice(tx: Db): Promise<DisableNotice | undefined> {
  const [row] = await query<{
    id: string; url: string; catalog_id: string; catalog_name: string; recipient: string; consecutive_failures: number; disabled_at: string;
  }>(tx,
    `SELECT w.id, w.url, w.catalog_id, c.name AS catalog_name, coalesce(w.owner_email, c.owner_email) AS recipient,
            w.consecutive_failures, w.disabled_at
       FROM webhooks w JOIN catalogs c ON c.id = w.catalog_id
      WHERE w.status = 'disabled' AND w.disabled_notice_sent_at IS NULL
      ORDER BY w.disabled_at LIMIT 1
      FOR UPDATE OF w SKIP LOCKED`);
  if (!row) return undefined;
  return {
    webhookId: row.id, url: row.url, catalogId: row.catalog_id, catalogName: row.catalog_name,
    recipient: row.recipient, consecutiveFailures: row.consecutive_failures, disabledAt: new Date(row.disabled_at),
  };
}

export async function markNoticeSent(tx: Db, webhookId: string): Promise<void> {
  await query(tx, 'UPDATE webhooks SET disabled_notice_sent_at = now() WHERE id = $1', [webhookId]);
}
