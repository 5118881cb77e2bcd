// The outbox store: domain events appended in the caller's transaction, claimed, marked sent and cleaned up by the relay.
import { query, sql } from '../../platform/db/sql.ts';
import type { Db, SqlFragment } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { traceparent } from '../../platform/tracing.ts';
import type { DomainEvent, EventType } from './envelope.ts';

// The event document is built in envelope.ts; its types are reached from here too.
export { domainEvent } from './envelope.ts';
export type { DomainEvent, DomainEventInput, EventType } from './envelope.ts';

/** A record for the outbox, ready to append: one Kafka record, as the relay will publish it. */
export interface OutboxRow {
  /** Logical topic, without the environment prefix (the relay adds it). */
  readonly topic: string;
  readonly key: string;
  readonly eventId: string;
  /** The exact bytes to publish; never re-serialized after this point. */
  readonly payload: string;
  /** A domain event's type, its `event-type` header; absent for work messages. */
  readonly type?: EventType;
  /** A domain event's catalog, which GET /events lists it under; absent for work messages. */
  readonly catalogId?: string;
  /** The trace context it continues (W3C traceparent); by default, the span current when it is written. */
  readonly traceparent?: string;
}

export interface WriteOutboxOptions {
  /** Wake the relay at once (delivered at commit only; a rollback sends nothing). Default true. */
  readonly notify?: boolean;
}

/** Channel the relay LISTENs on. */
export const OUTBOX_CHANNEL = 'outbox';

/**
 * The outbox is batched: a row holds, in parallel arrays and in publishing order, the records
 * one statement appended for one topic and catalog (at most this many), so an import batch of
 * 100 items is one row, not 100, written, claimed and marked sent once.
 */
const EVENTS_PER_ROW = 1000;

/**
 * The relay's lanes (docs/design.md, "The outbox"): every record gets one, the hash of its catalog
 * (of its key when it has none: a work message), so all the records of a key share a lane. One
 * relay at a time publishes a lane, in id order, and relays publish different lanes side by side.
 * Fixed: another count would move keys to other lanes while their records wait.
 */
export const OUTBOX_LANES = 16;
/** The lane of the rows written before there were lanes: published before any other. */
export const LEGACY_LANE = -1;

/** A record's lane in SQL, from its topic, key and catalog columns. A changelog key begins with its catalog (itemEventKey). */
const laneOf = (record: string): SqlFragment => sql.raw(`mod(mod(hashtext(coalesce(${record}.catalog_id::text,
  CASE WHEN ${record}.topic = '${TOPICS.items}' THEN ${record}.key::json ->> 0 ELSE ${record}.key END)), ${OUTBOX_LANES}) + ${OUTBOX_LANES}, ${OUTBOX_LANES})`);

/**
 * A row's trace contexts: none when no record was traced (traces off), one when all its records
 * share it (a request's, an import batch's: the common case), else one per record.
 */
const TRACEPARENTS = sql.raw(`CASE WHEN bool_or(r.tp IS NOT NULL) THEN CASE
    WHEN bool_and(r.tp IS NOT NULL) AND min(r.tp COLLATE "C") = max(r.tp COLLATE "C") THEN ARRAY[min(r.tp COLLATE "C")]
    ELSE array_agg(r.tp ORDER BY r.n) END END`);

/**
 * The INSERT of the records `select` yields as (event_id, topic, key, payload, type,
 * catalog_id, ord, traceparent), grouped into rows by topic, catalog and lane, each row's records
 * in `ord` order (rows get their ids in the order of their first record). `returning` names what it returns.
 */
function insertRecords(select: SqlFragment, returning: SqlFragment): SqlFragment {
  return sql`INSERT INTO outbox (topic, catalog_id, lane, event_ids, keys, types, payloads, size, first_event_id, last_event_id, traceparents)
      SELECT r.topic, r.catalog_id, r.lane, array_agg(r.event_id ORDER BY r.n), array_agg(r.key ORDER BY r.n),
        array_agg(r.type ORDER BY r.n), array_agg(r.payload ORDER BY r.n), count(*),
        min(r.event_id::text COLLATE "C")::uuid, max(r.event_id::text COLLATE "C")::uuid,
        ${TRACEPARENTS}
      FROM (SELECT l.*, row_number() OVER (PARTITION BY l.topic, l.catalog_id, l.lane ORDER BY l.ord) AS n
              FROM (SELECT s.*, ${laneOf('s')} AS lane
                      FROM (${select}) AS s(event_id, topic, key, payload, type, catalog_id, ord, tp)) AS l) AS r
      GROUP BY r.topic, r.catalog_id, r.lane, (r.n - 1) / ${EVENTS_PER_ROW}
      ORDER BY min(r.ord)
      RETURNING ${returning}`;
}

/**
 * For a statement that appends events in one round trip with the change they report: its
 * `events` and `notified` CTEs, `events` appending the records `select` yields (event_id, topic,
 * key, payload, type, catalog_id, ord, traceparent: see insertRecords) and `notified` waking the relay when
 * it appended any.
 */
export function appendEventsCtes(select: SqlFragment): SqlFragment {
  return sql`events AS (
      ${insertRecords(select, sql`1`)}
    ), notified AS (
      SELECT pg_notify(${OUTBOX_CHANNEL}::text, '') FROM (SELECT 1 FROM events LIMIT 1) AS any_event
    )`;
}

/**
 * Appends, in one statement, the records `select` yields as (event_id, topic, key, payload,
 * type): records that GET /events does not list (changelog records, with the type of the event
 * they go with), built by SQL from the rows they describe. Wakes the relay; returns each
 * record's key and event id.
 */
export async function appendRows(db: Db, select: SqlFragment): Promise<Array<{ key: string; eventId: string }>> {
  const rows = await query<{ key: string; event_id: string }>(db, 'outbox.append_rows', sql`
    WITH appended AS (
      ${insertRecords(sql`SELECT a.event_id, a.topic, a.key, a.payload, a.type, NULL::uuid, 0, NULL::text FROM (${select}) AS a(event_id, topic, key, payload, type)`,
        sql`keys, event_ids`)}
    ), notified AS (
      SELECT pg_notify(${OUTBOX_CHANNEL}::text, '') FROM (SELECT 1 FROM appended LIMIT 1) AS any_row
    )
    SELECT r.key, r.event_id FROM appended, unnest(appended.keys, appended.event_ids) AS r(key, event_id), (SELECT count(*) FROM notified) AS n`);
  return rows.map((row) => ({ key: row.key, eventId: row.event_id }));
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
 * The Kafka headers of an outbox record: `event-id` on every record; on an event and on a
 * changelog record (which carries the headers of the event it goes with) also `event-type`,
 * `catalog-id`, `content-type` and `schema-version`. Only the event type is stored; the rest comes
 * from the row's columns, or a changelog record's key, when it is published, which keeps the
 * outbox rows, and the statements that write and claim them, small.
 */
export function recordHeaders(record: OutboxRecord): Record<string, string> {
  const catalogId = record.catalog_id ?? (record.topic === TOPICS.items ? catalogOfItemKey(record.key) : null);
  if (catalogId === null) return { 'event-id': record.event_id };
  return {
    ...(record.type === null ? {} : { 'event-type': record.type }), 'event-id': record.event_id,
    'catalog-id': catalogId, 'content-type': 'application/json', 'schema-version': EVENT_SCHEMA_VERSION,
  };
}

/** The catalog id an item's key (itemEventKey) begins with. */
export const catalogOfItemKey = (key: string): string => (JSON.parse(key) as string[])[0]!;

/** The outbox record for a domain event on `catalog.events.v1`, keyed by its resource (see itemEventKey). */
export function eventRow(event: DomainEvent<object>, key: string = event.resourceId): OutboxRow {
  return { topic: TOPICS.events, key, eventId: event.id, payload: JSON.stringify(event), type: event.type, catalogId: event.catalogId };
}

/**
 * The outbox record for a work message on another topic (`catalog.imports.v1` keyed by jobId,
 * `catalog.media.v1` by sourceUrlHash, `catalog.webhook-deliveries.v1` by webhook id).
 */
export function messageRow(input: { topic: string; key: string; body: unknown; eventId?: string }): OutboxRow {
  return { topic: input.topic, key: input.key, eventId: input.eventId ?? newId(), payload: JSON.stringify(input.body) };
}

/**
 * Appends records to the outbox, in one statement: a row for each topic and catalog among them,
 * each keeping their order. Call it with the transaction that makes the change the records
 * describe (`tx` inside `db.transactional`): they commit, or vanish, together with it (STYLE:
 * no enqueue outside the transaction).
 */
export async function writeOutbox(db: Db, rows: readonly OutboxRow[], options: WriteOutboxOptions = {}): Promise<void> {
  if (rows.length === 0) return;
  const current = traceparent() ?? null;
  const insert = insertRecords(sql`SELECT e, t, k, p, y, c, o, tp FROM unnest(${rows.map((r) => r.eventId)}::uuid[], ${rows.map((r) => r.topic)}::text[],
      ${rows.map((r) => r.key)}::text[], ${rows.map((r) => r.payload)}::text[], ${rows.map((r) => r.type ?? null)}::text[],
      ${rows.map((r) => r.catalogId ?? null)}::uuid[], ${rows.map((r) => r.traceparent ?? current)}::text[]) WITH ORDINALITY AS u(e, t, k, p, y, c, tp, o)`, sql`1`);
  // The notification rides on the insert: one round trip, hot paths included.
  await query(db, 'outbox.append_events', options.notify === false ? insert : sql`WITH written AS (${insert}) SELECT pg_notify(${OUTBOX_CHANNEL}::text, '')`);
}

/** An outbox record as the relay claims it, with the row it is part of. */
export interface OutboxRecord {
  /** The outbox row (batch) holding it. */
  readonly row: string;
  /** The row's lane (OUTBOX_LANES). */
  readonly lane: number;
  readonly event_id: string;
  readonly topic: string;
  readonly key: string;
  readonly payload: string;
  /** A domain event's type (its event-type header), a changelog record's the type of its event; null for a work message. */
  readonly type: string | null;
  /** A domain event's catalog; null for a work message or changelog record. */
  readonly catalog_id: string | null;
  /** When the transaction that wrote it ran, in milliseconds since the epoch: its Kafka timestamp. */
  readonly committed_at: string;
  /** The trace context of the change that wrote it; null when it was not traced. */
  readonly traceparent: string | null;
}

/**
 * The oldest unsent rows of each of `lanes`, each lane's holding up to `limit` records (one row at
 * least, whatever its size), and their records in publishing order. The caller holds the lanes'
 * locks, which keep every other relay off them; the rows of the lane from before lanes go first.
 * `more`: unsent rows were left for the next claim.
 */
export async function claimOutbox(db: Db, lanes: readonly number[], limit: number): Promise<{ records: OutboxRecord[]; more: boolean }> {
  if (lanes.length === 0) return { records: [], more: false };
  const waiting = await query<{ id: string; lane: number; running: string }>(db, 'outbox.claim_rows',
    `SELECT w.id, w.lane, sum(w.size) OVER (PARTITION BY w.lane ORDER BY w.id) AS running
       FROM unnest($1::smallint[]) AS l(lane),
            LATERAL (SELECT id, lane, size FROM outbox WHERE sent_at IS NULL AND lane = l.lane ORDER BY id LIMIT $2) AS w
      WHERE w.lane = ${LEGACY_LANE} OR NOT EXISTS (SELECT 1 FROM outbox WHERE sent_at IS NULL AND lane = ${LEGACY_LANE})`,
    [lanes, limit]);
  const rowsOfLane = new Map<number, number>();
  const taken = waiting.filter((row) => {
    const before = rowsOfLane.get(row.lane) ?? 0;
    rowsOfLane.set(row.lane, before + 1);
    return before === 0 || Number(row.running) <= limit;
  }).map((row) => row.id);
  if (taken.length === 0) return { records: [], more: false };
  const records = await query<OutboxRecord>(db, 'outbox.claim_records',
    `SELECT o.id AS row, o.lane, e.event_id, o.topic, e.key, e.payload, e.type, o.catalog_id,
            floor(extract(epoch FROM o.created_at) * 1000)::bigint::text AS committed_at, o.traceparents[CASE WHEN cardinality(o.traceparents) = 1 THEN 1 ELSE e.ord END] AS traceparent
       FROM outbox o, unnest(o.event_ids, o.keys, o.payloads, o.types) WITH ORDINALITY AS e(event_id, key, payload, type, ord)
      WHERE o.id = ANY($1::bigint[]) AND o.sent_at IS NULL ORDER BY o.id, e.ord`, [taken]);
  return { records, more: taken.length < waiting.length || [...rowsOfLane.values()].some((rows) => rows === limit) };
}

/**
 * The records not published yet: how many, and the oldest one's age in seconds (0 when none
 * waits); and how many the broker refused for good wait parked (domain/events/parked.ts).
 */
export async function outboxBacklog(db: Db): Promise<{ pending: number; lagSeconds: number; parked: number }> {
  const [row] = await query<{ pending: string; lag: number; parked: number }>(db, 'outbox.backlog',
    `SELECT coalesce(sum(size), 0) AS pending, coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS lag,
        (SELECT count(*)::int FROM outbox_parked WHERE resent_at IS NULL) AS parked
       FROM outbox WHERE sent_at IS NULL`);
  return { pending: Number(row?.pending ?? 0), lagSeconds: row?.lag ?? 0, parked: row?.parked ?? 0 };
}

/** Marks the outbox rows `rows` (OutboxRecord.row) sent. */
export async function markOutboxSent(db: Db, rows: readonly string[]): Promise<void> {
  await query(db, 'outbox.mark_sent', 'UPDATE outbox SET sent_at = now() WHERE id = ANY($1::bigint[]) AND sent_at IS NULL', [[...new Set(rows)]]);
}

/**
 * Deletes up to `limit` sent rows: events (which GET /events reads) sent before `cutoff.events`,
 * work messages sent before `cutoff.others`; returns how many.
 */
export async function deleteSentOutbox(db: Db, cutoff: { events: Date; others: Date }, limit: number): Promise<number> {
  const [row] = await query<{ deleted: string }>(db, 'outbox.delete_sent',
    `WITH gone AS (DELETE FROM outbox WHERE id IN (
       SELECT id FROM outbox WHERE sent_at < CASE WHEN catalog_id IS NULL THEN $2::timestamptz ELSE $1::timestamptz END
        ORDER BY id LIMIT $3) RETURNING 1)
     SELECT count(*) AS deleted FROM gone`, [cutoff.events, cutoff.others, limit]);
  return Number(row?.deleted ?? 0);
}
