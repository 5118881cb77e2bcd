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
 * key, payload, headers) and `notified` waking the relay when it inserted any.
 */
export function appendEventsCtes(select: SqlFragment): SqlFragment {
  return sql`events AS (
      INSERT INTO outbox (event_id, topic, key, payload, headers)
      ${select}
      RETURNING 1
    ), notified AS (
      SELECT pg_notify(${OUTBOX_CHANNEL}::text, '') FROM (SELECT 1 FROM events LIMIT 1) AS any_event
    )`;
}

// 5 parameters a row, well under the 65,535 a statement may carry.
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
export const mediaEventKey = (catalogId: string, sourceUrlHash: string): string => JSON.stringify([catalogId, sourceUrlHash]);

/** The headers of every event on `catalog.events.v1`. */
export function eventHeaders(event: Pick<DomainEvent, 'id' | 'type' | 'catalogId'>): Record<string, string> {
  return {
    'event-id': event.id, 'event-type': event.type, 'catalog-id': event.catalogId,
    'content-type': 'application/json', 'schema-version': EVENT_SCHEMA_VERSION,
  };
}

/** The outbox row for a domain event on `catalog.events.v1`, keyed by its resource (see itemEventKey). */
export function eventRow(event: DomainEvent<object>, key: string = event.resourceId): OutboxRow {
  return { topic: TOPICS.events, key, eventId: event.id, payload: JSON.stringify(event), headers: eventHeaders(event) };
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
      `(${mark(row.eventId)}::uuid, ${mark(row.topic)}, ${mark(row.key)}, ${mark(row.payload)}, ${mark(JSON.stringify(row.headers ?? {}))}::jsonb)`);
    const insert = `INSERT INTO outbox (event_id, topic, key, payload, headers) VALUES ${values.join(', ')}`;
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
    `SELECT id, event_id, topic, key, payload, headers FROM outbox
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

/** Deletes up to `limit` rows sent before `cutoff`; returns how many. */
export async function deleteSentOutbox(db: Db, cutoff: Date, limit: number): Promise<number> {
  const [row] = await query<{ deleted: string }>(db,
    `WITH gone AS (DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE sent_at < $1 ORDER BY id LIMIT $2) RETURNING 1)
     SELECT count(*) AS deleted FROM gone`, [cutoff, limit]);
  return Number(row?.deleted ?? 0);
}
