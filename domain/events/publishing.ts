// How far a catalog's changes are published on Kafka (GET /events/publishing): its unpublished changes and its newest published event, read from the outbox.
import { query, sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { isoTime } from '../items/view.ts';

export interface PublishingState {
  readonly caughtUp: boolean;
  readonly unpublished: number;
  readonly oldestUnpublishedAgeSeconds: number;
  readonly publishedThrough: string;
  readonly lastPublished: { eventId: string; committedAt: string; publishedAt: string } | null;
}

/**
 * The catalog's publishing state. Its unpublished changes are its unsent events and the unsent
 * changelog records of its items (written apart from their event by stock and media changes,
 * and claimed apart from it when a claim ends between the two), counted once per event id. Only
 * unsent rows are read (a partial index holds them). The newest published event is the last of
 * the catalog's sent row that starts latest, found backwards on the catalog's index.
 */
export async function publishingState(db: Db, catalogId: string): Promise<PublishingState> {
  const [row] = await query<{
    unpublished: string; oldest_age: number | null; published_through: string;
    last_event_id: string | null; last_committed_at: string | null; last_published_at: string | null;
  }>(db, sql`
    WITH waiting AS (
      SELECT r.event_id, o.created_at FROM outbox o, unnest(o.event_ids, o.keys) AS r(event_id, key)
       WHERE o.sent_at IS NULL AND (o.catalog_id = ${catalogId}::uuid
         OR (o.catalog_id IS NULL AND o.topic = ${TOPICS.items} AND starts_with(r.key, ${`["${catalogId}"`})))
    ), oldest AS (
      SELECT min(created_at) AS created_at, count(DISTINCT event_id) AS unpublished FROM waiting
    ), last AS (
      SELECT o.last_event_id, o.created_at, o.sent_at FROM outbox o
       WHERE o.catalog_id = ${catalogId}::uuid AND o.sent_at IS NOT NULL
       ORDER BY o.first_event_id DESC LIMIT 1
    )
    SELECT oldest.unpublished, extract(epoch FROM now() - oldest.created_at)::float8 AS oldest_age,
      ${sql.raw(isoTime('coalesce(oldest.created_at, now())'))} AS published_through, last.last_event_id,
      ${sql.raw(isoTime('last.created_at'))} AS last_committed_at, ${sql.raw(isoTime('last.sent_at'))} AS last_published_at
    FROM oldest LEFT JOIN last ON true`);
  const unpublished = Number(row!.unpublished);
  return {
    caughtUp: unpublished === 0,
    unpublished,
    // now() is the transaction's start: a change written since can look a moment younger than 0.
    oldestUnpublishedAgeSeconds: Math.max(0, row!.oldest_age ?? 0),
    publishedThrough: row!.published_through,
    lastPublished: row!.last_event_id === null ? null
      : { eventId: row!.last_event_id, committedAt: row!.last_committed_at!, publishedAt: row!.last_published_at! },
  };
}
