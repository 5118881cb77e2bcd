// The outbox store: domain events appended in the caller's transaction, claimed, marked sent and cleaned up by the relay.
import { query, sql } from '../../platform/db/sql.ts';
import type { Db, SqlFragment } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';

/** Event types of the spec's webhook catalogue (variant.* are marked as future there). */
export type EventType =
  | 'item.created' | 'item.updated' | 'item.deleted'
  | 'variant.created' | 'variant.updated' | 'variant.deleted'
  | 'stock.adjusted'
  | 'media.ingested' | 'media.ingestion_failed'
  | 'import.completed' | 'import.failed'
  | 'webhook.test';

/** The spec's event body: what goes on `catalog.events.v1` and, unchanged, into webhook deliveries. */
export interface DomainEvent<TData extends object = Record<string, unknown>> {
  readonly id: string;
  readonly type: EventType;
  readonly catalogId: string;
  /** For item events, the externalId. */
  readonly resourceId: string;
  /** ISO 8601, UTC, with milliseconds. */
  readonly createdAt: string;
  readonly data: TData;
}

export interface DomainEventInput<TData extends object> {
  readonly type: EventType;
  readonly catalogId: string;
  readonly resourceId: string;
  readonly data: TData;
  /** Only for tests that pin the clock. */
  readonly now?: Date;
}

/** One row of the outbox table, ready to insert. */
export interface OutboxRow {
  /** Logical topic, without the environment prefix (the relay adds it). */
  readonly topic: string;
  readonly key: string;
  readonly eventId: string;
  /** The exact bytes to publish; never re-serialized after this point. */
  readonly payload: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** A domain event's catalog, which GET /events lists it under; absent for work messages. */
  readonly catalogId?: string;
}

export interface WriteOutboxOptions {
  /** Wake the relay at once (delivered at commit only; a rollback sends nothing). Default true. */
  readonly notify?: boolean;
}

/** Channel the relay LISTENs on. */
export const OUTBOX_CHANNEL = 'outbox';

/**
 * For a statement that appends events in one round trip with the change they report: its
 * `events` and `notified` CTEs, `events` inserting the rows `select` yields (event_id, topic,
 * key, payload, headers, catalog_id) and `notified` waking the relay when it inserted any.
 */
export function appendEventsCtes(select: SqlFragment): SqlFragment {
  return sql`events AS (
      INSERT INTO outbox (event_id, topic, key, payload, headers, catalog_id)
      ${select}
      RETURNING 1
    ), notified AS (
      SELECT pg_notify(${OUTBOX_CHANNEL}::text, '') FROM (SELECT 1 FROM events LIMIT 1) AS any_event
    )`;
}

/**
 * Appends, in one statement, the rows `select` yields as (event_id, topic, key, payload): records
 * without a catalog of their own (work messages, changelog records), built by SQL from the rows
 * they describe. Wakes the relay; returns each row's key and event id.
 */
export async function appendRows(db: Db, select: SqlFragment): Promise<Array<{ key: string; eventId: string }>> {
  const rows = await query<{ key: string; event_id: string }>(db, sql`
    WITH appended AS (
      INSERT INTO outbox (event_id, topic, key, payload) ${select}
      RETURNING key, event_id
    ), notified AS (
      SELECT pg_notify(${OUTBOX_CHANNEL}::text, '') FROM (SELECT 1 FROM appended LIMIT 1) AS any_row
    )
    SELECT key, event_id FROM appended, (SELECT count(*) FROM notified) AS n`);
  return rows.map((row) => ({ key: row.key, eventId: row.event_id }));
}

// 6 parameters a row, well under the 65,535 a statement may carry.
const ROWS_PER_INSERT = 1000;

/** A new event with a time-ordered UUIDv7 id (the webhook event id and the Kafka `event-id` header). */
export function domainEvent<TData extends object>(input: DomainEventInput<TData>): DomainEvent<TData> {
  return {
    id: newId(),
    type: input.type,
    catalogId: input.catalogId,
    resourceId: input.resourceId,
    createdAt: (input.now ?? new Date()).toISOString(),
    data: input.data,
  };
}

/** The version of the event bodies' schema, in every event's `schema-version` header. */
export const EVENT_SCHEMA_VERSION = '1';

/**
 * Kafka keys of `catalog.events.v1`: all the events of one resource, and only those, share a key,
 * so they keep their order on one partition. An item's (its item.* and stock.adjusted events) is
 * its identity in its catalog, a media asset's its catalog and sourceUrlHash, each a JSON array of
 * strings (unambiguous whatever the strings hold); an import's is the job id and a webhook test's
 * the webhook id (UUIDs, unique on their own).
 */
export const itemEventKey = (catalogId: string, externalSystem: string, externalId: string): string =>
  JSON.stringify([catalogId, externalSystem, externalId]);
/** itemEventKey in SQL, from SQL expressions of the three texts. */
export const itemEventKeySql = (catalogId: string, externalSystem: string, externalId: string): string =>
  `'[' || to_json(${catalogId})::text || ',' || to_json(${externalSystem})::text || ',' || to_json(${externalId})::text || ']'`;
export const mediaEventKey = (catalogId: string, sourceUrlHash: string): string => JSON.stringify([catalogId, sourceUrlHash]);

/**
 * The Kafka headers of an outbox row: `event-id`, what the row stored (an event's `event-type`),
 * and for a domain event its `catalog-id`, `content-type` and `schema-version`. Only the event
 * type is stored; the rest comes from the row's columns when it is published, which keeps the
 * outbox rows, and the statements that write and claim them, small.
 */
export function recordHeaders(record: OutboxRecord): Record<string, string> {
  const headers = { ...record.headers, 'event-id': record.event_id };
  return record.catalog_id === null ? headers
    : { ...headers, 'catalog-id': record.catalog_id, 'content-type': 'application/json', 'schema-version': EVENT_SCHEMA_VERSION };
}

/** The outbox row for a domain event on `catalog.events.v1`, keyed by its resource (see itemEventKey). */
export function eventRow(event: DomainEvent<object>, key: string = event.resourceId): OutboxRow {
  return { topic: TOPICS.events, key, eventId: event.id, payload: JSON.stringify(event), headers: { 'event-type': event.type }, catalogId: event.catalogId };
}

/**
 * The outbox row for a work message on another topic (`catalog.imports.v1` keyed by jobId,
 * `catalog.media.v1` by sourceUrlHash, `catalog.webhook-deliveries.v1` by webhook id).
 */
export function messageRow(input: { topic: string; key: string; body: unknown; eventId?: string; headers?: Record<string, string> }): OutboxRow {
  return {
    topic: input.topic,
    key: input.key,
    eventId: input.eventId ?? newId(),
    payload: JSON.stringify(input.body),
    ...(input.headers ? { headers: input.headers } : {}),
  };
}

/**
 * Appends rows to the outbox. Call it with the transaction that makes the change the rows
 * describe (`tx` inside `db.transactional`): they commit, or vanish, together with it (STYLE: no
 * enqueue outside the transaction).
 */
export async function writeOutbox(db: Db, rows: readonly OutboxRow[], options: WriteOutboxOptions = {}): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    const chunk = rows.slice(start, start + ROWS_PER_INSERT);
    const params: unknown[] = [];
    const mark = (value: unknown): string => `$${params.push(value)}`;
    const values = chunk.map((row) =>
      `(${mark(row.eventId)}::uuid, ${mark(row.topic)}, ${mark(row.key)}, ${mark(row.payload)}, ${mark(JSON.stringify(row.headers ?? {}))}::jsonb, ${mark(row.catalogId ?? null)}::uuid)`);
    const insert = `INSERT INTO outbox (event_id, topic, key, payload, headers, catalog_id) VALUES ${values.join(', ')}`;
    const last = start + ROWS_PER_INSERT >= rows.length;
    // The notification rides on the last insert: one round trip per chunk, hot paths included.
    await query(db,
      last && options.notify !== false ? `WITH written AS (${insert} RETURNING 1) SELECT pg_notify(${mark(OUTBOX_CHANNEL)}, '')` : insert,
      params);
  }
}

/** An outbox row as the relay claims it. */
export interface OutboxRecord {
  readonly id: string;
  readonly event_id: string;
  readonly topic: string;
  readonly key: string;
  readonly payload: string;
  readonly headers: Record<string, string>;
  /** A domain event's catalog; null for a work message. */
  readonly catalog_id: string | null;
}

// Any constant works as long as every relay uses the same one.
const RELAY_LOCK_KEY = 0x6f7574626f78;

/**
 * Locks up to `limit` unsent rows in id order, in the transaction `tx` that will mark them sent;
 * none when another relay is publishing. One relay publishes at a time, so rows with the same
 * key reach Kafka in id order even with several instances; SKIP LOCKED keeps it safe should that
 * lock ever be dropped.
 */
export async function claimOutbox(tx: Db, limit: number): Promise<OutboxRecord[]> {
  const [lock] = await query<{ locked: boolean }>(tx, 'SELECT pg_try_advisory_xact_lock($1) AS locked', [RELAY_LOCK_KEY]);
  if (!lock?.locked) return [];
  return query<OutboxRecord>(tx,
    `SELECT id, event_id, topic, key, payload, headers, catalog_id FROM outbox
      WHERE sent_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, [limit]);
}

/** The events not published yet: how many, and the oldest one's age in seconds (0 when none waits). */
export async function outboxBacklog(db: Db): Promise<{ pending: number; lagSeconds: number }> {
  const [row] = await query<{ pending: string; lag: number }>(db,
    `SELECT count(*) AS pending, coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS lag
       FROM outbox WHERE sent_at IS NULL`);
  return { pending: Number(row?.pending ?? 0), lagSeconds: row?.lag ?? 0 };
}

export async function markOutboxSent(tx: Db, ids: readonly string[]): Promise<void> {
  await query(tx, 'UPDATE outbox SET sent_at = now() WHERE id = ANY($1::bigint[])', [ids]);
}

/**
 * Deletes up to `limit` sent rows: events (which GET /events reads) sent before `cutoff.events`,
 * work messages sent before `cutoff.others`; returns how many.
 */
export async function deleteSentOutbox(db: Db, cutoff: { events: Date; others: Date }, limit: number): Promise<number> {
  const [row] = await query<{ deleted: string }>(db,
    `WITH gone AS (DELETE FROM outbox WHERE id IN (
       SELECT id FROM outbox WHERE sent_at < CASE WHEN catalog_id IS NULL THEN $2::timestamptz ELSE $1::timestamptz END
        ORDER BY id LIMIT $3) RETURNING 1)
     SELECT count(*) AS deleted FROM gone`, [cutoff.events, cutoff.others, limit]);
  return Number(row?.deleted ?? 0);
}

/** Filters of the event log (GET /events). */
export interface EventFilters {
  readonly type?: string | undefined;
  readonly resourceId?: string | undefined;
  /** ISO 8601 UTC with milliseconds, as events carry createdAt. */
  readonly since?: string | undefined;
  readonly until?: string | undefined;
  /** Only events after this event id. */
  readonly after?: string | undefined;
}

// UUIDv7 ids begin with their Unix time in ms: the lowest id of a millisecond bounds a time range
// on the index. An event's id and its createdAt are taken a moment apart, hence the margin.
const ID_CLOCK_MARGIN_MS = 1000;
const lowestIdAt = (ms: number): string => {
  const hex = Math.max(0, ms).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
};

/** A page of the catalog's events, oldest first, each as delivered. */
export async function eventPage(db: Db, catalogId: string, filters: EventFilters, limit: number): Promise<{ events: object[]; last: string | undefined; more: boolean }> {
  const conditions = [sql`catalog_id = ${catalogId}::uuid`];
  if (filters.after) conditions.push(sql`event_id > ${filters.after}::uuid`);
  if (filters.since) {
    conditions.push(sql`event_id >= ${lowestIdAt(Date.parse(filters.since) - ID_CLOCK_MARGIN_MS)}::uuid`);
    conditions.push(sql`payload::jsonb ->> 'createdAt' >= ${filters.since}`);
  }
  if (filters.until) {
    conditions.push(sql`event_id < ${lowestIdAt(Date.parse(filters.until) + ID_CLOCK_MARGIN_MS)}::uuid`);
    conditions.push(sql`payload::jsonb ->> 'createdAt' < ${filters.until}`);
  }
  if (filters.type) conditions.push(sql`headers ->> 'event-type' = ${filters.type}`);
  if (filters.resourceId) conditions.push(sql`payload::jsonb ->> 'resourceId' = ${filters.resourceId}`);
  const rows = await query<{ event_id: string; payload: string }>(db, sql`
    SELECT event_id, payload FROM outbox WHERE ${sql.join(conditions, sql` AND `)}
     ORDER BY event_id LIMIT ${limit + 1}`);
  const shown = rows.slice(0, limit);
  return { events: shown.map((row) => JSON.parse(row.payload) as object), last: shown.at(-1)?.event_id, more: rows.length > limit };
}

/** One of the catalog's events, as delivered, or undefined. */
export async function findEvent(db: Db, catalogId: string, eventId: string): Promise<object | undefined> {
  const [row] = await query<{ payload: string }>(db,
    'SELECT payload FROM outbox WHERE catalog_id = $1 AND event_id = $2', [catalogId, eventId]);
  return row && JSON.parse(row.payload) as object;
}
