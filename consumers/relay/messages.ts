// The Kafka messages of claimed outbox records: each record's own, an item event's changelog record, and a traced change's producer span.
import type { Message, TopicMessages } from 'kafkajs';
import { recordHeaders } from '../../domain/events/outbox.ts';
import type { OutboxRecord } from '../../domain/events/outbox.ts';
import { itemRecordOf, publishedItemRecord } from '../../domain/items/changelog.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { failSpan, spanPerGroup, startSpan } from '../../platform/tracing.ts';

/**
 * The record's messages, by topic: its own, and for an item event the item's changelog record
 * (with the event's key and headers). Both are stamped with the time their change was written,
 * not the publishing time (docs/design.md, "The item changelog").
 */
function addMessages(byTopic: Map<string, Message[]>, written: OutboxRecord, topicOf: (logical: string) => string, tp: string | undefined): void {
  const row = publishedItemRecord(written);
  const add = (topic: string, message: Message) => {
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

/**
 * Sends the records in one request (`sendBatch`). The traced records of one change and topic (one
 * upsert's, or an import batch's lines) share a producer span in the trace of that change, ended
 * once Kafka acked (or refused) the request.
 */
export async function sendRecords(records: readonly OutboxRecord[], topicOf: (logical: string) => string, sendBatch: (topicMessages: TopicMessages[]) => Promise<unknown>): Promise<void> {
  const byTopic = new Map<string, Message[]>();
  const { spans, traceparents } = spanPerGroup(records, (record) => (record.traceparent === null ? undefined : `${record.topic} ${record.traceparent}`),
    (first, count) => startSpan(`send ${first.topic}`, {
      kind: 'producer', parent: first.traceparent,
      attributes: {
        'messaging.system': 'kafka', 'messaging.destination.name': topicOf(first.topic),
        ...(count === 1 ? { 'catalog.event.id': first.event_id } : { 'messaging.batch.message_count': count }),
      },
    }));
  records.forEach((record, i) => addMessages(byTopic, record, topicOf, traceparents[i]));
  try {
    await sendBatch([...byTopic].map(([topic, messages]) => ({ topic, messages })));
  } catch (error) {
    for (const span of spans) failSpan(span, (error as Error).message);
    throw error;
  } finally {
    for (const span of spans) span.end();
  }
}
