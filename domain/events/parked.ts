// Parked outbox records: what the broker refused for good, set aside with its reason so every other record goes on; listed and re-sent by an operator.
import type { Actor } from '../../platform/actor.ts';
import { query, sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { conflict, notFound } from '../../platform/errors.ts';
import { isId, newId } from '../../platform/ids.ts';
import { recordAudits } from '../audit/audit-log.ts';
import { afterCursor, encodeCursor, keysetPage } from '../pagination.ts';
import { isoTime } from '../items/view.ts';
import { writeOutbox } from './outbox.ts';
import type { EventType, OutboxRecord } from './outbox.ts';

/** A record the relay set aside, as an operator sees it (its bytes stay in the table). */
export interface ParkedRecord {
  readonly id: string;
  readonly eventId: string;
  /** The logical topic (without the environment's prefix). */
  readonly topic: string;
  readonly key: string;
  readonly eventType: string | null;
  readonly catalogId: string | null;
  /** The broker's error, e.g. MESSAGE_TOO_LARGE. */
  readonly errorType: string;
  readonly reason: string;
  readonly byteSize: number;
  readonly parkedAt: string;
  readonly resentAt: string | null;
}

/** A record the broker refused, and why. */
export interface Refusal {
  readonly record: OutboxRecord;
  readonly errorType: string;
  readonly reason: string;
}

/** Sets the refused records aside, in the relay's claim transaction (which then marks their rows sent). */
export async function parkRecords(tx: Db, refused: readonly Refusal[]): Promise<void> {
  if (refused.length === 0) return;
  const column = <T>(pick: (refusal: Refusal) => T) => refused.map(pick);
  await query(tx, 'parked.park', `INSERT INTO outbox_parked (id, event_id, topic, key, payload, type, catalog_id, reason, error_type, byte_size)
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::uuid[], $8::text[], $9::text[], $10::int[])`, [
    column(() => newId()), column((r) => r.record.event_id), column((r) => r.record.topic), column((r) => r.record.key),
    column((r) => r.record.payload), column((r) => r.record.type), column((r) => r.record.catalog_id), column((r) => r.reason.slice(0, 2000)),
    column((r) => r.errorType), column((r) => Buffer.byteLength(r.record.payload)),
  ]);
}

interface ParkedRow {
  id: string; event_id: string; topic: string; key: string; type: string | null; catalog_id: string | null;
  error_type: string; reason: string; byte_size: number; parked_at: string; resent_at: string | null; parked_at_text: string;
}

const view = (row: ParkedRow): ParkedRecord => ({
  id: row.id, eventId: row.event_id, topic: row.topic, key: row.key, eventType: row.type, catalogId: row.catalog_id,
  errorType: row.error_type, reason: row.reason, byteSize: row.byte_size, parkedAt: row.parked_at, resentAt: row.resent_at,
});

export interface ParkedQuery {
  /** Only one catalog's records (its events); all of them otherwise. */
  readonly catalogId?: string;
  /** Also those re-sent already. */
  readonly includeResent?: boolean;
  readonly limit: number;
  readonly cursor?: string;
}

/** Parked records, oldest first, a page at a time. */
export async function listParked(db: Db, options: ParkedQuery): Promise<{ records: ParkedRecord[]; nextCursor: string | null }> {
  const rows = await query<ParkedRow>(db, 'parked.list', sql`
    SELECT id, event_id, topic, key, type, catalog_id, error_type, reason, byte_size, ${sql.raw(isoTime('parked_at'))} AS parked_at,
      CASE WHEN resent_at IS NULL THEN NULL ELSE ${sql.raw(isoTime('resent_at'))} END AS resent_at, parked_at::text AS parked_at_text
      FROM outbox_parked
     WHERE (${options.includeResent ?? false} OR resent_at IS NULL)
       AND (${options.catalogId ?? null}::uuid IS NULL OR catalog_id = ${options.catalogId ?? null}::uuid)
       AND ${options.cursor ? afterCursor(options.cursor, sql`parked_at, id`, 'asc') : sql`true`}
     ORDER BY parked_at, id LIMIT ${options.limit + 1}`);
  const page = keysetPage(rows, options.limit, (row) => encodeCursor({ at: row.parked_at_text, id: row.id }));
  return { records: page.rows.map(view), nextCursor: page.nextCursor };
}

/** How many records wait parked (not re-sent). */
export async function parkedCount(db: Db): Promise<number> {
  const [row] = await query<{ n: number }>(db, 'parked.count', 'SELECT count(*)::int AS n FROM outbox_parked WHERE resent_at IS NULL');
  return row?.n ?? 0;
}

/**
 * Appends parked records to the outbox again, unchanged (same event id, key and bytes), and marks
 * them re-sent: `ids`, or every waiting one; only `catalogId`'s when given. Should the broker still
 * refuse one, the relay parks it again. Returns the records re-sent.
 */
export async function resendParked(db: Db, selection: { ids?: readonly string[]; catalogId?: string }, actor: Actor): Promise<ParkedRecord[]> {
  return db.transactional(async (tx) => {
    const rows = await query<ParkedRow & { payload: string }>(tx, 'parked.resend', sql`
      UPDATE outbox_parked SET resent_at = now()
       WHERE resent_at IS NULL
         AND (${selection.ids === undefined} OR id = ANY(${selection.ids ?? []}::uuid[]))
         AND (${selection.catalogId ?? null}::uuid IS NULL OR catalog_id = ${selection.catalogId ?? null}::uuid)
      RETURNING id, event_id, topic, key, payload, type, catalog_id, error_type, reason, byte_size,
        ${sql.raw(isoTime('parked_at'))} AS parked_at, ${sql.raw(isoTime('resent_at'))} AS resent_at, parked_at::text AS parked_at_text`);
    rows.sort((a, b) => a.parked_at_text.localeCompare(b.parked_at_text) || a.id.localeCompare(b.id));
    await writeOutbox(tx, rows.map((row) => ({
      topic: row.topic, key: row.key, eventId: row.event_id, payload: row.payload,
      ...(row.type === null ? {} : { type: row.type as EventType }), ...(row.catalog_id === null ? {} : { catalogId: row.catalog_id }),
    })));
    const resent = rows.map(view);
    // A record of no catalog has no catalog's log to go in.
    await recordAudits(tx, actor, resent.flatMap((record) => (record.catalogId === null ? [] : [{
      catalogId: record.catalogId, action: 'parked_record.resent', resourceType: 'parked_record', resourceId: record.id,
      before: { resentAt: null }, after: { resentAt: record.resentAt, eventId: record.eventId, topic: record.topic, eventType: record.eventType },
    }])));
    return resent;
  });
}

/** Re-sends one parked record (resendParked); 404 for an unknown one, 409 for one re-sent already. */
export async function resendParkedRecord(db: Db, id: string, actor: Actor): Promise<ParkedRecord> {
  const [resent] = isId(id) ? await resendParked(db, { ids: [id.toLowerCase()] }, actor) : [];
  if (resent) return resent;
  const [known] = isId(id) ? await query<{ resent_at: string | null }>(db, 'parked.resent_at', 'SELECT resent_at::text FROM outbox_parked WHERE id = $1', [id.toLowerCase()]) : [];
  if (!known) throw notFound(`Parked record "${id}"`);
  throw conflict(`Parked record "${id}" was re-sent already, at ${known.resent_at}.`);
}
