// Fan-out: an event becomes one delivery per matching webhook of its own catalog, the first ones already leased to this worker.
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import type { Db } from '../../platform/db/sql.ts';
import { insertDeliveries, notifyDue } from './delivery-store.ts';
import type { ClaimedDelivery } from './delivery-store.ts';
import { catalogsWithActiveWebhooks } from './subscriptions.ts';

export interface FanOutEvent {
  readonly id: string;
  readonly catalogId: string;
  readonly type: string;
  readonly createdAt: string;
  /** The exact bytes published, sent unchanged to every subscriber. */
  readonly payload: string;
  /** The trace context its deliveries continue (each attempt is a span in it). */
  readonly traceparent?: string;
  /** The record's Kafka key (its resource) and offset: an ordered webhook's order per resource. */
  readonly key?: string | undefined;
  readonly offset?: string | undefined;
}

/**
 * A record as the fan-out first meets it: its catalog, and the event, read only when a webhook
 * of that catalog may want it (most records of an import have none: their bodies are never parsed).
 */
export interface FanOutRecord {
  readonly catalogId: string;
  /** The event, or undefined (and logged) for a record no webhook could receive. */
  readonly read: () => FanOutEvent | undefined;
  /** The record's trace context (its `traceparent` header, or the fan-out's span in it). */
  readonly traceparent?: string;
}

export interface FanOutOptions {
  /** The ladder's first delay; only when it is 0 can a delivery be attempted at once. */
  readonly firstDelayMs: number;
  /** How many new deliveries this worker will attempt itself right away (born leased). */
  readonly leaseSlots: number;
  readonly leaseMs: number;
  readonly leaseToken: string;
}

/**
 * The events whose catalog has an active webhook. Most catalogs have none, and an import's
 * events come by the thousand: asking first keeps their payloads off the wire to Postgres.
 */
async function withActiveWebhooks(db: Db, events: readonly FanOutRecord[]): Promise<readonly FanOutRecord[]> {
  if (events.length === 0) return events;
  const catalogs = [...new Set(events.map((e) => e.catalogId))];
  const subscribed = await catalogsWithActiveWebhooks(db, catalogs);
  if (subscribed.size === catalogs.length) return events;
  return events.filter((e) => subscribed.has(e.catalogId.toLowerCase()));
}

/**
 * Creates the deliveries of a batch of events in one statement, once the events of catalogs
 * without an active webhook are set aside: one per active webhook of the event's own catalog
 * that subscribes to its type (or `*`), whose filter accepts it, and existed when the event happened.
 * A re-read event creates nothing twice (the (webhook, event) pair is unique). Up to `leaseSlots`
 * new deliveries are inserted already claimed (attempt 1, leased): they skip a round trip through
 * the schedule and are returned for the caller to attempt at once. The rest are due now (or after
 * the first delay) for whichever worker claims them; if this worker dies, its leases expire and
 * the same happens to the leased ones. The leased ones' secrets are opened with `secrets`.
 */
export async function createDeliveries(
  db: Db, secrets: SecretBox, batch: readonly FanOutRecord[], options: FanOutOptions,
): Promise<{ created: number; leased: ClaimedDelivery[] }> {
  const events = (await withActiveWebhooks(db, batch)).flatMap((record) => {
    const event = record.read();
    return event === undefined ? [] : [record.traceparent === undefined ? event : { ...event, traceparent: record.traceparent }];
  });
  if (events.length === 0) return { created: 0, leased: [] };
  const result = await insertDeliveries(db, secrets, {
    events,
    leased: options.firstDelayMs === 0 ? options.leaseSlots : 0,
    leaseToken: options.leaseToken,
    leaseMs: options.leaseMs,
    firstDelayMs: options.firstDelayMs,
  });
  if (result.created > result.leased.length) await notifyDue(db);
  return result;
}
