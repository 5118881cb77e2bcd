// The fan-out consumer: every event on catalog.events.v1 becomes one pending delivery per matching webhook of its catalog.
import { failSpan, spanPerGroup, startSpan } from '../../platform/tracing.ts';
import { randomUUID } from 'node:crypto';
import type { KafkaMessage } from 'kafkajs';
import { createDeliveries } from '../../domain/webhooks/fan-out.ts';
import type { FanOutEvent, FanOutRecord } from '../../domain/webhooks/fan-out.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import type { Db } from '../../platform/db/sql.ts';
import type { KafkaClient, RunningConsumer } from '../../platform/kafka/client.ts';
import { isId } from '../../platform/ids.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import type { Logger } from '../../platform/log/logger.ts';
import { groupCommit } from '../../platform/group-commit.ts';
import type { Dispatcher } from './dispatcher.ts';

// Slots asked of the dispatcher per event: about one per webhook it reaches; deliveries beyond
// them go through the schedule like retries do.
const SLOTS_PER_EVENT = 8;
// Partitions whose batches are read at once: as many as the events topic has by default
// (KAFKA_PARTITIONS), their batches sharing inserts.
const PARTITIONS_AT_ONCE = 12;

export interface FanOutOptions {
  readonly kafka: KafkaClient;
  readonly db: Db;
  /** Opens the secrets of the deliveries this worker attempts at once. */
  readonly secrets: SecretBox;
  readonly logger: Logger;
  /** The ladder's first delay (0 by default: the first attempt is immediate). */
  readonly firstDelayMs: number;
  /** This process's dispatcher: it attempts the new deliveries it has room for at once. */
  readonly dispatcher: Dispatcher;
}

/** Reads one record's body as an event, or undefined (logged) for a record no webhook could receive. */
function readEvent(message: KafkaMessage, logger: Logger): FanOutEvent | undefined {
  const payload = message.value?.toString('utf8');
  if (!payload) return undefined;
  try {
    const event = JSON.parse(payload) as Partial<Record<'id' | 'type' | 'catalogId' | 'createdAt', unknown>>;
    if (typeof event.id === 'string' && isId(event.id) && typeof event.catalogId === 'string' && isId(event.catalogId)
      && typeof event.type === 'string' && typeof event.createdAt === 'string' && !Number.isNaN(Date.parse(event.createdAt))) {
      return { id: event.id, catalogId: event.catalogId, type: event.type, createdAt: event.createdAt, payload, key: message.key?.toString(), offset: message.offset };
    }
  } catch {
    // Logged below: a malformed record is skipped for good, retrying cannot fix it.
  }
  logger.warn({ offset: message.offset, key: message.key?.toString() }, 'skipped a record that is not a catalog event');
  return undefined;
}

/**
 * One record as the fan-out first meets it: its catalog from the `catalog-id` header, the body
 * left unparsed until a webhook of that catalog may want it. A record without the header (written
 * before events had headers) is read at once; one whose body cannot be read yields nothing.
 */
export function toFanOutRecord(message: KafkaMessage, logger: Logger): FanOutRecord | undefined {
  const header = message.headers?.['catalog-id'];
  const catalogId = header === undefined ? undefined : String(header);
  const tp = message.headers?.traceparent;
  const traced = tp === undefined ? {} : { traceparent: String(tp) };
  if (catalogId !== undefined && isId(catalogId)) return { catalogId, read: () => readEvent(message, logger), ...traced };
  const event = readEvent(message, logger);
  return event && { catalogId: event.catalogId, read: () => event, ...traced };
}

/**
 * Group `<prefix>catalog.webhooks.fan-out`: one per environment, so test runs and environments
 * sharing a broker never rebalance each other. The batches of several partitions that arrive
 * while an insert runs share the next one (a group commit): with a dozen partitions, each fetch
 * brings a dozen small batches, and an insert each would cost Postgres more than the deliveries.
 * A partition's offsets are committed after the insert of its batch commits; a crash re-reads the
 * batch and the unique (webhook, event) pair drops the repeats.
 */
export async function startFanOut(options: FanOutOptions): Promise<RunningConsumer> {
  const log = options.logger.child({ component: 'webhook-fan-out' });
  const stats = { batches: 0, inserts: 0, events: 0, created: 0, leased: 0, insertMs: 0 };
  const { dispatcher } = options;
  // Throws on a database failure: each batch is then inserted alone, so a failure reaches only its
  // own partition, which kafkajs retries, nothing committed past it.
  const insert = groupCommit<readonly FanOutRecord[], void>(async (_key, batches) => {
    const events = batches.flat();
    const slots = dispatcher.reserve(events.length * SLOTS_PER_EVENT);
    try {
      const inserting = performance.now();
      const { created, leased } = await createDeliveries(options.db, options.secrets, events, {
        firstDelayMs: options.firstDelayMs, leaseSlots: slots, leaseMs: dispatcher.leaseMs, leaseToken: randomUUID(),
      });
      stats.insertMs += Math.round(performance.now() - inserting);
      stats.inserts += 1;
      stats.batches += batches.length;
      stats.events += events.length;
      stats.created += created;
      stats.leased += leased.length;
      dispatcher.release(slots - leased.length);
      dispatcher.attemptNow(leased);
      if (created > 0) log.debug({ batches: batches.length, events: events.length, created, leased: leased.length }, 'deliveries created');
    } catch (error) {
      dispatcher.release(slots);
      throw error;
    }
    return batches.map(() => undefined);
  }, { retryAlone: true, name: 'insert webhook deliveries' });
  const consumer = await options.kafka.runConsumer({
    groupId: `${options.kafka.topicPrefix}catalog.webhooks.fan-out`,
    topics: [TOPICS.events],
    // A new group starts at the beginning; events older than a webhook never reach it anyway.
    fromBeginning: true,
    partitionsConsumedConcurrently: PARTITIONS_AT_ONCE,
    eachBatch: async ({ batch, heartbeat }) => {
      const records = batch.messages.map((m) => toFanOutRecord(m, log)).filter((e): e is FanOutRecord => e !== undefined);
      // A consumer span per traced change (the events of an import batch share one); its
      // deliveries, and every attempt of them, continue it.
      const { spans, traceparents } = spanPerGroup(records, (r) => r.traceparent, (first, count) => startSpan(`process ${TOPICS.events}`, {
        kind: 'consumer', parent: first.traceparent,
        attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': batch.topic, ...(count > 1 ? { 'messaging.batch.message_count': count } : {}) },
      }));
      const events = records.map((r, i) => (traceparents[i] ? { ...r, traceparent: traceparents[i] } : r));
      try {
        await insert('deliveries', events);
      } catch (error) {
        for (const span of spans) failSpan(span, (error as Error).message);
        throw error;
      } finally {
        for (const span of spans) span.end();
      }
      await heartbeat();
    },
  });
  return {
    ...consumer,
    async stop() {
      await consumer.stop();
      log.info(stats, 'webhook fan-out stopped');
    },
  };
}
