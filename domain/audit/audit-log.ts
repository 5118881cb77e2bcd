// The audit log's store: an entry written inside each administrative action's transaction, read newest first, purged past its retention.
import { isDeepStrictEqual } from 'node:util';
import type { AuditEntry, AuditLogPage } from '../../generated/client.ts';
import type { Actor } from '../../platform/actor.ts';
import { query, sql } from '../../platform/db/sql.ts';
import type { Db, SqlFragment } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';
import { afterCursor, encodeCursor, keysetPage } from '../pagination.ts';
import { isoTime } from '../items/view.ts';

/** What an action did to one resource. `before` and `after` are API views: they never hold a secret. */
export interface AuditChange {
  readonly catalogId: string;
  /** `<resource type>.<what happened>` (the contract's list, listAuditLog). */
  readonly action: string;
  readonly resourceType: string;
  readonly resourceId: string;
  readonly before: object | null;
  readonly after: object | null;
}

/**
 * Writes the entry through `db`, which must be the action's own transaction: the entry commits
 * with the action or not at all.
 */
export async function recordAudit(db: Db, actor: Actor, change: AuditChange): Promise<void> {
  await recordAudits(db, actor, [change]);
}

/** Several entries in one statement (an operator's command that changes many resources at once). */
export async function recordAudits(db: Db, actor: Actor, changes: readonly AuditChange[]): Promise<void> {
  if (changes.length === 0) return;
  await query(db, 'audit.record', `
    INSERT INTO audit_log (id, catalog_id, action, actor_kind, actor_key_id, operator, request_id, client_address, resource_type, resource_id, before, after)
    SELECT v.id, v.catalog_id, v.action, $3, $4, $5, $6, $7, v.resource_type, v.resource_id, v.before, v.after
      FROM unnest($1::uuid[], $2::uuid[], $8::text[], $9::text[], $10::text[], $11::jsonb[], $12::jsonb[])
        AS v(id, catalog_id, action, resource_type, resource_id, before, after)`, [
    changes.map(() => newId()), changes.map((c) => c.catalogId), actor.kind, actor.keyId, actor.operator, actor.requestId, actor.clientAddress,
    changes.map((c) => c.action), changes.map((c) => c.resourceType), changes.map((c) => c.resourceId),
    changes.map((c) => (c.before === null ? null : JSON.stringify(c.before))), changes.map((c) => (c.after === null ? null : JSON.stringify(c.after))),
  ]);
}

export interface AuditFilter {
  /** A key's or session's id, `cli` or `service`. */
  readonly actor?: string | undefined;
  readonly action?: string | undefined;
  readonly resourceType?: string | undefined;
  readonly resourceId?: string | undefined;
  readonly since?: string | undefined;
  readonly until?: string | undefined;
}

interface AuditRow {
  id: string;
  at: string;
  at_text: string;
  action: string;
  actor_kind: AuditEntry['actor']['kind'];
  actor_key_id: string | null;
  key_prefix: string | null;
  label: string | null;
  operator: string | null;
  request_id: string | null;
  client_address: string | null;
  resource_type: string;
  resource_id: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The actor condition: `cli` and `service` by kind; an id by key (anything else matches nothing, never a 500). */
function actorCondition(actor: string): SqlFragment {
  if (actor === 'cli' || actor === 'service') return sql`a.actor_kind = ${actor}`;
  return UUID.test(actor) ? sql`a.actor_key_id = ${actor.toLowerCase()}::uuid` : sql`false`;
}

export interface AuditPage {
  readonly rows: Array<{ catalogId: string; entry: AuditEntry }>;
  readonly nextCursor: string | null;
}

/** The catalog's entries as `GET /audit-log` answers them. */
export async function listAuditLog(db: Db, catalogId: string, filter: AuditFilter, page: { limit: number; cursor?: string | undefined }): Promise<AuditLogPage> {
  const { rows, nextCursor } = await auditPage(db, catalogId, filter, page);
  return { entries: rows.map((r) => r.entry), nextCursor };
}

/** Entries newest first, of one catalog or (the operator's CLI) of every catalog, a page at a time. */
export async function auditPage(
  db: Db,
  catalogId: string | undefined,
  filter: AuditFilter,
  page: { limit: number; cursor?: string | undefined },
): Promise<AuditPage> {
  const conditions: SqlFragment[] = [];
  if (catalogId !== undefined) conditions.push(sql`a.catalog_id = ${catalogId}::uuid`);
  if (filter.actor !== undefined) conditions.push(actorCondition(filter.actor));
  if (filter.action !== undefined) conditions.push(sql`a.action = ${filter.action}`);
  if (filter.resourceType !== undefined) conditions.push(sql`a.resource_type = ${filter.resourceType}`);
  if (filter.resourceId !== undefined) conditions.push(sql`a.resource_id = ${filter.resourceId}`);
  if (filter.since !== undefined) conditions.push(sql`a.at >= ${filter.since}::timestamptz`);
  if (filter.until !== undefined) conditions.push(sql`a.at < ${filter.until}::timestamptz`);
  if (page.cursor !== undefined) conditions.push(afterCursor(page.cursor, sql`a.at, a.id`, 'desc'));
  const where = conditions.length === 0 ? sql`true` : sql.join(conditions, sql` AND `);
  const rows = await query<AuditRow & { catalog_id: string }>(db, 'audit.list', sql`
    SELECT a.id, a.catalog_id, ${sql.raw(isoTime('a.at'))} AS at, a.at::text AS at_text, a.action, a.actor_kind, a.actor_key_id,
           k.key_prefix, k.label, a.operator, a.request_id, a.client_address, a.resource_type, a.resource_id, a.before, a.after
      FROM audit_log a LEFT JOIN api_keys k ON k.id = a.actor_key_id
     WHERE ${where}
     ORDER BY a.at DESC, a.id DESC
     LIMIT ${page.limit + 1}`);
  const cut = keysetPage(rows, page.limit, (last) => encodeCursor({ at: last.at_text, id: last.id }));
  return { rows: cut.rows.map((r) => ({ catalogId: r.catalog_id, entry: auditView(r) })), nextCursor: cut.nextCursor };
}

function auditView(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    at: row.at,
    action: row.action,
    actor: { kind: row.actor_kind, keyId: row.actor_key_id, keyPrefix: row.key_prefix, label: row.label, operator: row.operator },
    requestId: row.request_id,
    clientAddress: row.client_address,
    resource: { type: row.resource_type, id: row.resource_id },
    before: row.before,
    after: row.after,
  };
}

const PURGE_BATCH = 5_000;

/** Deletes entries older than `cutoff`, a batch a statement, while `goOn()`; returns how many. */
export async function purgeAuditLog(db: Db, cutoff: Date, goOn: () => boolean): Promise<number> {
  let deleted = 0;
  for (;;) {
    const rows = await query(db, 'audit.purge', sql`
      DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ${cutoff.toISOString()}::timestamptz LIMIT ${PURGE_BATCH})
      RETURNING 1`);
    deleted += rows.length;
    if (rows.length < PURGE_BATCH || !goOn()) return deleted;
  }
}

/** The fields of a view whose values differ, before and after (its `updatedAt` aside); undefined when none does. */
export function changedFields<View extends object>(before: View, after: View): { before: Partial<View>; after: Partial<View> } | undefined {
  const was: Partial<View> = {};
  const is: Partial<View> = {};
  for (const field of Object.keys(after) as Array<keyof View>) {
    // By value: a filter read back from jsonb has its keys in another order than the client sent.
    if (field === 'updatedAt' || isDeepStrictEqual(before[field], after[field])) continue;
    was[field] = before[field];
    is[field] = after[field];
  }
  return Object.keys(is).length === 0 ? undefined : { before: was, after: is };
}
