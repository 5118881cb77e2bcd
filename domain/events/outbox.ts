// Builds domain events and appends them to the outbox table inside the caller's own database transaction.
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

/**
 * Runs one SQL statement in the caller's transaction, e.g. `(sql, params) => em.execute(sql, params)`
 * inside `em.transactional`, or a pg client with `placeholders: 'dollar'`.
 */
export type SqlExecutor = (sql: string, params: unknown[]) => Promise<unknown>;

export interface WriteOutboxOptions {
  /** `question` for MikroORM's `em.execute` (the default), `dollar` for node-postgres. */
  readonly placeholders?: 'question' | 'dollar';
  /** Wake the relay at once (delivered at commit only; a rollback sends nothing). Default true. */
  readonly notify?: boolean;
}

/** Channel the relay LISTENs on. */
export const OUTBOX_CHANNEL = 'outbox';

// 5 parameters a row; node-postgres allows 65,535 per statement, MikroORM inlines them anyway.
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

/** The outbox row for a domain event: topic `catalog.events.v1`, key = resourceId (per-resource order). */
export function eventRow(event: DomainEvent<object>): OutboxRow {
  return {
    topic: TOPICS.events,
    key: event.resourceId,
    eventId: event.id,
    payload: JSON.stringify(event),
    headers: { 'event-type': event.type },
  };
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
 * Appends rows to the outbox. Call it inside the transaction that makes the change the rows
 * describe: they commit, or vanish, together with it (STYLE: no enqueue outside the transaction).
 */
export async function writeOutbox(execute: SqlExecutor, rows: readonly OutboxRow[], options: WriteOutboxOptions = {}): Promise<void> {
  if (rows.length === 0) return;
  const dollar = options.placeholders === 'dollar';
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    const chunk = rows.slice(start, start + ROWS_PER_INSERT);
    const params: unknown[] = [];
    const mark = (value: unknown): string => {
      params.push(value);
      return dollar ? `$${params.length}` : '?';
    };
    const values = chunk.map((row) =>
      `(${mark(row.eventId)}::uuid, ${mark(row.topic)}, ${mark(row.key)}, ${mark(row.payload)}, ${mark(JSON.stringify(row.headers ?? {}))}::jsonb)`);
    const insert = `INSERT INTO outbox (event_id, topic, key, payload, headers) VALUES ${values.join(', ')}`;
    const last = start + ROWS_PER_INSERT >= rows.length;
    // The notification rides on the last insert: one round trip per chunk, hot paths included.
    await execute(
      last && options.notify !== false ? `WITH written AS (${insert} RETURNING 1) SELECT pg_notify(${mark(OUTBOX_CHANNEL)}, '')` : insert,
      params,
    );
  }
}
