// The event log as the API reads it (GET /events, GET /events/{id}): the catalog's events within the retention period, as delivered.
import type { Db } from '../../platform/db/sql.ts';
import { notFound } from '../../platform/errors.ts';
import { decodeIdCursor, encodeIdCursor } from '../pagination.ts';
import { eventPage, findEvent } from './outbox.ts';

export interface EventQuery {
  readonly limit: number;
  readonly cursor?: string | undefined;
  readonly after?: string | undefined;
  readonly type?: string | undefined;
  readonly resourceId?: string | undefined;
  readonly since?: string | undefined;
  readonly until?: string | undefined;
}

// Events carry createdAt as toISOString() writes it, so a bound in that form compares as text.
const isoBound = (time: string | undefined) => (time === undefined ? undefined : new Date(time).toISOString());

/** Oldest first; a cursor and `after` both mean "after that event", the later of the two wins. */
export async function listEvents(db: Db, catalogId: string, request: EventQuery): Promise<{ events: object[]; nextCursor: string | null }> {
  const fromCursor = request.cursor === undefined ? undefined : decodeIdCursor(request.cursor);
  const after = [fromCursor, request.after?.toLowerCase()].filter((id): id is string => id !== undefined).sort().at(-1);
  const page = await eventPage(db, catalogId, {
    after, type: request.type, resourceId: request.resourceId, since: isoBound(request.since), until: isoBound(request.until),
  }, request.limit);
  return { events: page.events, nextCursor: page.more && page.last !== undefined ? encodeIdCursor(page.last) : null };
}

export async function getEvent(db: Db, catalogId: string, eventId: string): Promise<object> {
  const event = await findEvent(db, catalogId, eventId.toLowerCase());
  if (!event) throw notFound('Event');
  return event;
}
