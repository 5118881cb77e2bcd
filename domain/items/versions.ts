// Item versions: recorded by the deletes and stock movements (the upsert's write records its own), listed newest first, restored, and purged after retention.
import type { Item, ItemVersion } from '../../generated/client.ts';
import { query, sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { notFound, unprocessable } from '../../platform/errors.ts';
import { decodeLineCursor, encodeLineCursor } from '../pagination.ts';
import { exportLine } from './read.ts';
import { isoTime, itemJson } from './view.ts';
import type { VersionSource } from './version-source.ts';

const ITEM_NOW = sql.raw(itemJson('c.name', 'b.name'));

/** Records a stock movement's version of the item `itemId` (its row already counts it): onHand before and after. */
export async function recordStockVersion(db: Db, itemId: string, previousOnHand: number, source: VersionSource, eventId: string): Promise<void> {
  await query(db, sql`
    INSERT INTO item_versions (catalog_id, external_system, external_id, version, item_id, kind, content_hash, changed_fields, previous, item, source, event_id)
    SELECT i.catalog_id, i.external_system, i.external_id, i.version, i.id, 'stock', i.content_hash, ARRAY['onHand'],
      jsonb_build_object('onHand', ${previousOnHand}::int), ${ITEM_NOW}, ${JSON.stringify(source)}::jsonb, ${eventId}::uuid
    FROM items i LEFT JOIN categories c ON c.id = i.category_id LEFT JOIN brands b ON b.id = i.brand_id
    WHERE i.id = ${itemId}::uuid`);
}

/** What a delete removed, for its version. */
export interface DeletedRow {
  readonly id: string;
  /** The item's last version number before the delete. */
  readonly version: number;
  readonly contentHash: string;
  /** The item as GET answered it, JSON text. */
  readonly item: string;
}

/** Records a delete's version: the item as it was, so restoring it brings the item back. */
export async function recordDeleteVersion(db: Db, catalogId: string, externalSystem: string, externalId: string, deleted: DeletedRow, source: VersionSource, eventId: string): Promise<void> {
  await query(db, sql`
    INSERT INTO item_versions (catalog_id, external_system, external_id, version, item_id, kind, content_hash, item, source, event_id)
    VALUES (${catalogId}::uuid, ${externalSystem}, ${externalId}, ${deleted.version + 1}, ${deleted.id}::uuid, 'deleted',
      ${deleted.contentHash}, ${deleted.item}, ${JSON.stringify(source)}::jsonb, ${eventId}::uuid)`);
}

interface VersionRow {
  version: number;
  kind: ItemVersion['kind'];
  created_at: string;
  content_hash: string | null;
  changed_fields: string[] | null;
  previous: Record<string, unknown> | null;
  item: string | null;
  source: VersionSource | null;
  event_id: string | null;
  expired: boolean;
}

const COLUMNS = sql.raw(`version, kind, ${isoTime('created_at')} AS created_at, content_hash, changed_fields, previous, item, source, event_id`);
const identity = (catalogId: string, externalSystem: string, externalId: string) =>
  sql`catalog_id = ${catalogId}::uuid AND external_system = ${externalSystem} AND external_id = ${externalId}`;

function view(row: VersionRow): ItemVersion {
  const item = row.item === null ? null : JSON.parse(row.item) as Item;
  const fields = row.changed_fields ?? [];
  const current = (field: string) => (row.kind === 'deleted' || item === null ? null : (item as unknown as Record<string, unknown>)[field] ?? null);
  return {
    version: row.version,
    kind: row.kind,
    createdAt: row.created_at,
    contentHash: row.content_hash,
    changes: fields.map((field) => ({ field, previous: row.previous?.[field] ?? null, value: current(field) })),
    item,
    source: row.source,
    eventId: row.event_id,
  };
}

/**
 * The item's versions, newest first, a page after `cursor`; they outlive the item, so a deleted
 * item still has its list. 404 only when the identity has no version at all.
 */
export async function listVersions(db: Db, catalogId: string, externalSystem: string, externalId: string, page: { limit: number; cursor?: string | undefined }): Promise<{ versions: ItemVersion[]; nextCursor: string | null }> {
  const before = page.cursor === undefined ? sql`` : sql`AND version < ${decodeLineCursor(page.cursor)}`;
  const rows = await query<VersionRow>(db, sql`
    SELECT ${COLUMNS} FROM item_versions WHERE ${identity(catalogId, externalSystem, externalId)} ${before}
    ORDER BY version DESC LIMIT ${page.limit + 1}`);
  if (rows.length === 0 && page.cursor === undefined) throw notFound(`Item ${externalSystem}/${externalId} (or any version of it)`);
  const shown = rows.slice(0, page.limit);
  return { versions: shown.map(view), nextCursor: rows.length > page.limit ? encodeLineCursor(shown.at(-1)!.version) : null };
}

/**
 * The upsert payload that restores `version`: the item as that version left it (as it was, for a
 * delete). Refused when the version is older than the retention period, even before the purge
 * removes it: what the service keeps is the period, not what a purge left behind.
 */
export async function restorePayload(db: Db, catalogId: string, externalSystem: string, externalId: string, version: number, retentionDays: number): Promise<Record<string, unknown>> {
  const [row] = await query<VersionRow>(db, sql`
    SELECT ${COLUMNS}, created_at < now() - make_interval(days => ${retentionDays}) AS expired
    FROM item_versions WHERE ${identity(catalogId, externalSystem, externalId)} AND version = ${version}`);
  if (!row || row.expired) {
    const [oldest] = await query<{ version: number }>(db, sql`
      SELECT version FROM item_versions WHERE ${identity(catalogId, externalSystem, externalId)}
        AND created_at >= now() - make_interval(days => ${retentionDays}) ORDER BY version LIMIT 1`);
    if (row || (oldest && version < oldest.version)) {
      throw unprocessable(`Version ${version} of item ${externalSystem}/${externalId} is older than the ${retentionDays}-day retention period`
        + ` and can no longer be restored${oldest ? `; the oldest version that can is ${oldest.version}` : ''}.`);
    }
    throw notFound(`Version ${version} of item ${externalSystem}/${externalId}`);
  }
  return exportLine(JSON.parse(row.item!) as Item);
}

// Versions deleted per statement: a purge never holds many row locks or a long transaction.
const PURGE_BATCH = 1000;

/** Deletes the versions older than `cutoff`, a batch at a time while `goOn()`; how many it deleted. */
export async function purgeVersions(db: Db, cutoff: Date, goOn: () => boolean): Promise<number> {
  let deleted = 0;
  for (;;) {
    const rows = await query(db, sql`
      DELETE FROM item_versions v USING (
        SELECT catalog_id, external_system, external_id, version FROM item_versions WHERE created_at < ${cutoff.toISOString()}::timestamptz LIMIT ${PURGE_BATCH}
      ) old
      WHERE v.catalog_id = old.catalog_id AND v.external_system = old.external_system AND v.external_id = old.external_id AND v.version = old.version
      RETURNING 1`);
    deleted += rows.length;
    if (rows.length < PURGE_BATCH || !goOn()) return deleted;
  }
}
