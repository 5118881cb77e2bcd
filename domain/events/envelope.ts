// The event document's envelope: its fields and their order, built in JavaScript (domainEvent) and in SQL (the item write), byte for byte alike.
import { sql } from '../../platform/db/sql.ts';
import type { SqlFragment } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';

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

/**
 * The envelope's fields in the document's order, each with how SQL writes its value: `bare`, a
 * text that needs no escaping (a UUID, an event type) between quotes; `text`, a text through
 * to_json (which escapes these strings as JSON.stringify does); `json`, JSON text as it is.
 */
const FIELDS = [
  ['id', 'bare'], ['type', 'bare'], ['catalogId', 'bare'], ['resourceId', 'text'], ['createdAt', 'text'], ['data', 'json'],
] as const satisfies ReadonlyArray<readonly [keyof DomainEvent, 'bare' | 'text' | 'json']>;

/** The envelope's field names, in order. */
export const ENVELOPE_FIELDS: ReadonlyArray<keyof DomainEvent> = FIELDS.map(([field]) => field);

/** A new event with a time-ordered UUIDv7 id (the webhook event id and the Kafka `event-id` header). */
export function domainEvent<TData extends object>(input: DomainEventInput<TData>): DomainEvent<TData> {
  const values: DomainEvent<TData> = {
    id: newId(), type: input.type, catalogId: input.catalogId, resourceId: input.resourceId,
    createdAt: (input.now ?? new Date()).toISOString(), data: input.data,
  };
  // Built in FIELDS' order: JSON.stringify writes the keys in insertion order.
  const event: Record<string, unknown> = {};
  for (const [field] of FIELDS) event[field] = values[field];
  return event as unknown as DomainEvent<TData>;
}

const literal = (text: string) => sql.raw(`'${text.replaceAll("'", "''")}'`);

/**
 * The event document as SQL text (a `concat`), given an SQL expression for each field's value
 * (see FIELDS for what each must be): the same bytes as JSON.stringify(domainEvent(…)).
 */
export function envelopeSql(values: Readonly<Record<keyof DomainEvent, SqlFragment>>): SqlFragment {
  const parts: SqlFragment[] = [];
  let text = '{';
  FIELDS.forEach(([field, form], index) => {
    text += `${index === 0 ? '' : ','}"${field}":`;
    if (form === 'bare') {
      parts.push(literal(`${text}"`), values[field]);
      text = '"';
    } else {
      parts.push(literal(text), form === 'text' ? sql`to_json(${values[field]})` : values[field]);
      text = '';
    }
  });
  parts.push(literal(`${text}}`));
  return sql`concat(${sql.join(parts, sql`, `)})`;
}
