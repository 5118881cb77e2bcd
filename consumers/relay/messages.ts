// The Kafka messages of claimed outbox records (each record's own, an item event's changelog record, a traced change's producer span), sent until Kafka acknowledged every one.
import type { Message, RecordMetadata, TopicMessages } from 'kafkajs';
import { recordHeaders } from '../../domain/events/outbox.ts';
import type { OutboxRecord } from '../../domain/events/outbox.ts';
import { itemRecordOf, publishedItemRecord } from '../../domain/items/changelog.ts';
import { partitionOf } from '../../platform/kafka/partitioner.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { failSpan, spanPerGroup, startSpan } from '../../platform/tracing.ts';

/**
 * The record's messages, by topic: its own, and for an item event the item's changelog record
 * (with the event's key and headers). Both are stamped with the time their change was written,
 * not the publishing time (docs/design.md, "The item changelog").
 */
function addMessages(byTopic: Map<string, Message[]>, written: OutboxRecord, topicOf: (logical: string) => string, partitions: ReadonlyMap<string, number>, tp: string | undefined): void {
  const row = publishedItemRecord(written);
  // The partition is chosen here, as the producer's partitioner would, so that each message's
  // acknowledgement can be found in the send's answer (unacknowledged below).
  const add = (topic: string, message: Message) => {
    const count = partitions.get(topic);
    if (count === undefined) throw new Error(`no partition count known for topic ${topic}`);
    message.partition = partitionOf(message.key as string, count);
    const messages = byTopic.get(topic);
    if (messages) messages.push(message);
    else byTopic.set(topic, [message]);
  };
  // A traced record carries its send span's context, which the consumers continue.
  const headers = tp ? { ...recordHeaders(row), traceparent: tp } : recordHeaders(row);
  add(topicOf(row.topic), { key: row.key, value: row.payload, headers, timestamp: row.committed_at });
  const record = itemRecordOf(row);
  if (record) add(topicOf(TOPICS.items), { key: row.key, value: record.value, headers, timestamp: row.committed_at });
}

/** What Kafka answered a send with: one entry per topic and partition it acknowledged (kafkajs' RecordMetadata). */
export type Acknowledgement = Pick<RecordMetadata, 'topicName' | 'partition' | 'errorCode'>;

/** Where the records go: the full topic name of a logical one, and each full topic's partition count. */
export interface Destination {
  readonly topicOf: (logical: string) => string;
  /** Every service topic's partition count, by full name. */
  readonly partitionCounts: () => Promise<ReadonlyMap<string, number>>;
}

// A send whose answer leaves records unacknowledged is repeated for those records this many
// times in all before the claim fails and the relay's backoff takes over.
const SEND_ROUNDS = 3;

/** The messages of `sent` whose topic and partition the answer does not acknowledge. */
export function unacknowledged(sent: readonly TopicMessages[], answer: readonly Acknowledgement[]): TopicMessages[] {
  const acknowledged = new Set(answer.filter((ack) => ack.errorCode === 0).map((ack) => `${ack.partition} ${ack.topicName}`));
  return sent.map(({ topic, messages }) => ({ topic, messages: messages.filter((m) => !acknowledged.has(`${m.partition} ${topic}`)) }))
    .filter(({ messages }) => messages.length > 0);
}

const countOf = (topicMessages: readonly TopicMessages[]): number => topicMessages.reduce((n, { messages }) => n + messages.length, 0);

/**
 * Sends the records in one request (`sendBatch`), then again those Kafka's answer did not
 * acknowledge, until it acknowledged them all; throws when some are still unacknowledged after
 * SEND_ROUNDS. kafkajs can resolve a send without sending every partition's records: when a
 * leader moves mid-send, it re-sends only to brokers that had not answered yet, so records whose
 * partition moved to a broker that had answered are never sent (docs/design.md, "Acknowledged,
 * then marked sent"). `onUnacknowledged` hears of each send that left some out.
 *
 * The traced records of one change and topic (one upsert's, or an import batch's lines) share a
 * producer span in the trace of that change, ended once Kafka acknowledged (or refused) them.
 */
export async function sendRecords(records: readonly OutboxRecord[], destination: Destination,
  sendBatch: (topicMessages: TopicMessages[]) => Promise<readonly Acknowledgement[]>,
  onUnacknowledged: (count: number, of: number) => void = () => undefined): Promise<void> {
  const { topicOf } = destination;
  const partitions = await destination.partitionCounts();
  const byTopic = new Map<string, Message[]>();
  const { spans, traceparents } = spanPerGroup(records, (record) => (record.traceparent === null ? undefined : `${record.topic} ${record.traceparent}`),
    (first, count) => startSpan(`send ${first.topic}`, {
      kind: 'producer', parent: first.traceparent,
      attributes: {
        'messaging.system': 'kafka', 'messaging.destination.name': topicOf(first.topic),
        ...(count === 1 ? { 'catalog.event.id': first.event_id } : { 'messaging.batch.message_count': count }),
      },
    }));
  records.forEach((record, i) => addMessages(byTopic, record, topicOf, partitions, traceparents[i]));
  let pending: TopicMessages[] = [...byTopic].map(([topic, messages]) => ({ topic, messages }));
  const total = countOf(pending);
  try {
    for (let round = 1; ; round++) {
      pending = unacknowledged(pending, await sendBatch(pending));
      if (pending.length === 0) return;
      onUnacknowledged(countOf(pending), total);
      if (round === SEND_ROUNDS) {
        throw new Error(`Kafka answered ${SEND_ROUNDS} sends without acknowledging ${countOf(pending)} of ${total} records `
          + `(${pending.map(({ topic, messages }) => `${topic} partitions ${[...new Set(messages.map((m) => m.partition))].join(',')}`).join('; ')}); none of them is marked sent`);
      }
    }
  } catch (error) {
    for (const span of spans) failSpan(span, (error as Error).message);
    throw error;
  } finally {
    for (const span of spans) span.end();
  }
}
