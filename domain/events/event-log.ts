// The event log as the API reads it (GET /events, GET /events/{id}): the catalog's events within the retention period, as delivered.
import type { EventEnvelope, EventList } from '../../generated/client.ts';
import { query, sql } from '../../platform/db/sql.ts';
import type { Db, SqlFragment } from '../../platform/db/sql.ts';
import { notFound } from '../../platform/errors.ts';
import { decodeBeforeCursor, decodeIdCursor, encodeBeforeCursor, encodeIdCursor } from '../pagination.ts';

export interface EventQuery {
  readonly limit: number;
  readonly cursor?: string | undefined;
  readonly after?: string | undefined;
  readonly type?: string | undefined;
  readonly resourceId?: string | undefined;
  readonly since?: string | undefined;
  readonly until?: string | undefined;
  readonly order?: 'asc' | 'desc' | undefined;
}

// Events carry createdAt as toISOString() writes it, so a bound in that form compares as text.
const isoBound = (time: string | undefined) => (time === undefined ? undefined : new Date(time).toISOString());

/** Oldest first; a cursor and `after` both mean "after that event", the later of the two wins. */
export async function listEvents(db: Db, catalogId: string, request: EventQuery): Promise<EventList> {
  if (request.order === 'desc') return listNewestFirst(db, catalogId, request);
  const fromCursor = request.cursor === undefined ? undefined : decodeIdCursor(request.cursor);
  const after = [fromCursor, request.after?.toLowerCase()].filter((id): id is string => id !== undefined).sort().at(-1);
  const page = await eventPage(db, catalogId, {
    after, type: request.type, resourceId: request.resourceId, since: isoBound(request.since), until: isoBound(request.until),
  }, request.limit);
  return { events: page.events, nextCursor: page.more && page.last !== undefined ? encodeIdCursor(page.last) : null };
}

/** Newest first: a cursor means "before that event"; `after` and `since` bound how far back. */
async function listNewestFirst(db: Db, catalogId: string, request: EventQuery): Promise<EventList> {
  const page = await newestEventPage(db, catalogId, {
    before: request.cursor === undefined ? undefined : decodeBeforeCursor(request.cursor), after: request.after?.toLowerCase(),
    type: request.type, resourceId: request.resourceId, since: isoBound(request.since), until: isoBound(request.until),
  }, request.limit);
  return { events: page.events, nextCursor: page.more && page.last !== undefined ? encodeBeforeCursor(page.last) : null };
}

export async function getEvent(db: Db, catalogId: string, eventId: string): Promise<EventEnvelope> {
  const event = await findEvent(db, catalogId, eventId.toLowerCase());
  if (!event) throw notFound('Event');
  return event;
}

/** Filters of the event log (GET /events). */
interface EventFilters {
  /** Only events before this event id (newest first). */
  readonly before?: string | undefined;
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
const NO_ID = '00000000-0000-0000-0000-000000000000';
const MAX_ID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
// The id span of outbox row `o`, as its GiST index has it.
const SPAN = sql.raw(`uuid_range(o.first_event_id, o.last_event_id, '[]')`);
// Rows read a round at first, and at most, while a filtered page looks for its events.
const FIRST_ROUND_ROWS = 20;
const MAX_ROUND_ROWS = 1000;

/** The filters as conditions on an event `e`, and the id range they bound: after `start`, before `end`. */
function eventConditions(filters: EventFilters): { conditions: SqlFragment[]; start: string; end: string | undefined } {
  const conditions = [sql`true`];
  let start = filters.after ?? NO_ID;
  let end: string | undefined;
  if (filters.since) {
    const lowest = lowestIdAt(Date.parse(filters.since) - ID_CLOCK_MARGIN_MS);
    if (lowest > start) start = lowest;
    conditions.push(sql`e.payload::jsonb ->> 'createdAt' >= ${filters.since}`);
  }
  if (filters.until) {
    end = lowestIdAt(Date.parse(filters.until) + ID_CLOCK_MARGIN_MS);
    conditions.push(sql`e.event_id < ${end}::uuid`, sql`e.payload::jsonb ->> 'createdAt' < ${filters.until}`);
  }
  if (filters.type) conditions.push(sql`e.type = ${filters.type}`);
  if (filters.resourceId) conditions.push(sql`e.payload::jsonb ->> 'resourceId' = ${filters.resourceId}`);
  return { conditions, start, end };
}

/**
 * A page of the catalog's events, oldest (lowest id) first, each as delivered.
 *
 * Rows hold id ranges that may interleave (concurrent writers), so a page is read in rounds: the
 * rows whose range holds the position (found by its GiST index), then the next `n` rows by first
 * id. Every event up to the n-th row's first id is then among them: any other row starts after
 * it. So those events are final, and a round that finds enough of them ends the page.
 */
async function eventPage(db: Db, catalogId: string, filters: EventFilters, limit: number): Promise<{ events: EventEnvelope[]; last: string | undefined; more: boolean }> {
  const { conditions, start, end } = eventConditions(filters);
  let position = start;
  const found: Array<{ event_id: string; payload: string }> = [];
  for (let rowsPerRound = FIRST_ROUND_ROWS; found.length <= limit; rowsPerRound = Math.min(rowsPerRound * 2, MAX_ROUND_ROWS)) {
    const next = await query<{ id: string; first_event_id: string }>(db, 'events.next_rows', sql`
      SELECT id, first_event_id FROM outbox
       WHERE catalog_id = ${catalogId}::uuid AND first_event_id > ${position}::uuid ${end ? sql`AND first_event_id < ${end}::uuid` : sql``}
       ORDER BY first_event_id LIMIT ${rowsPerRound}`);
    const holding = position === NO_ID ? [] : await query<{ id: string }>(db, 'events.holding_rows', sql`
      SELECT o.id FROM outbox o WHERE o.catalog_id = ${catalogId}::uuid AND ${SPAN} @> ${position}::uuid`);
    const complete = next.length < rowsPerRound;
    const reached = next.at(-1)?.first_event_id;
    const events = await query<{ event_id: string; payload: string }>(db, 'events.page', sql`
      SELECT e.event_id, e.payload
        FROM outbox o, unnest(o.event_ids, o.payloads, o.types) AS e(event_id, payload, type)
       WHERE o.id = ANY(${[...next.map((r) => r.id), ...holding.map((r) => r.id)]}::bigint[])
         AND e.event_id > ${position}::uuid ${complete ? sql`` : sql`AND e.event_id <= ${reached}::uuid`}
         AND ${sql.join(conditions, sql` AND `)}
       ORDER BY e.event_id LIMIT ${limit + 1 - found.length}`);
    found.push(...events);
    if (complete) break;
    position = reached!;
  }
  const shown = found.slice(0, limit);
  return { events: shown.map((row) => JSON.parse(row.payload) as EventEnvelope), last: shown.at(-1)?.event_id, more: found.length > limit };
}

/**
 * A page of the catalog's events, newest (highest id) first: the mirror of eventPage. A round reads
 * the next `n` rows below the position by first id, and the rows whose range reaches into
 * [n-th row's first id, position): every event in that span is then among them, since any other
 * row ends before it.
 */
async function newestEventPage(db: Db, catalogId: string, filters: EventFilters, limit: number): Promise<{ events: EventEnvelope[]; last: string | undefined; more: boolean }> {
  const { conditions, start, end } = eventConditions(filters);
  let position = [filters.before, end].filter((id): id is string => id !== undefined).sort()[0] ?? MAX_ID;
  const found: Array<{ event_id: string; payload: string }> = [];
  for (let rowsPerRound = FIRST_ROUND_ROWS; found.length <= limit; rowsPerRound = Math.min(rowsPerRound * 2, MAX_ROUND_ROWS)) {
    const next = await query<{ id: string; first_event_id: string }>(db, 'events.previous_rows', sql`
      SELECT id, first_event_id FROM outbox
       WHERE catalog_id = ${catalogId}::uuid AND first_event_id < ${position}::uuid AND last_event_id > ${start}::uuid
       ORDER BY first_event_id DESC LIMIT ${rowsPerRound}`);
    const complete = next.length < rowsPerRound;
    const reached = next.at(-1)?.first_event_id;
    const reaching = complete ? [] : await query<{ id: string }>(db, 'events.reaching_rows', sql`
      SELECT o.id FROM outbox o WHERE o.catalog_id = ${catalogId}::uuid AND ${SPAN} && uuid_range(${reached}::uuid, ${position}::uuid, '[)')`);
    const events = await query<{ event_id: string; payload: string }>(db, 'events.page_newest', sql`
      SELECT e.event_id, e.payload
        FROM outbox o, unnest(o.event_ids, o.payloads, o.types) AS e(event_id, payload, type)
       WHERE o.id = ANY(${[...new Set([...next.map((r) => r.id), ...reaching.map((r) => r.id)])]}::bigint[])
         AND e.event_id < ${position}::uuid AND e.event_id > ${start}::uuid ${complete ? sql`` : sql`AND e.event_id >= ${reached}::uuid`}
         AND ${sql.join(conditions, sql` AND `)}
       ORDER BY e.event_id DESC LIMIT ${limit + 1 - found.length}`);
    found.push(...events);
    if (complete) break;
    position = reached!;
  }
  const shown = found.slice(0, limit);
  return { events: shown.map((row) => JSON.parse(row.payload) as EventEnvelope), last: shown.at(-1)?.event_id, more: found.length > limit };
}

/** One of the catalog's events, as delivered, or undefined. */
async function findEvent(db: Db, catalogId: string, eventId: string): Promise<EventEnvelope | undefined> {
  const [row] = await query<{ payload: string }>(db, 'events.get', sql`
    SELECT e.payload FROM outbox o, unnest(o.event_ids, o.payloads) AS e(event_id, payload)
     WHERE o.catalog_id = ${catalogId}::uuid AND ${SPAN} @> ${eventId}::uuid
       AND e.event_id = ${eventId}::uuid`);
  return row && JSON.parse(row.payload) as EventEnvelope;
}
