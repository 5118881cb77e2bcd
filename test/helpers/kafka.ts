// Kafka for integration tests: the shared broker, a private broker a test may stop, a topic prefix per run, and reading a topic to its end.
import { randomBytes } from 'node:crypto';
import { basename, resolve } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import type { IHeaders } from 'kafkajs';
import { ensureKafka, stopKafka } from '../../scripts/kafka.ts';
import type { KafkaOptions } from '../../scripts/kafka.ts';
import { silenceKafkajsTimerWarning } from '../../platform/kafka/kafkajs-quirks.ts';

export interface TopicRecord {
  readonly partition: number;
  readonly offset: string;
  readonly key: string | null;
  readonly value: Buffer | null;
  readonly headers: Record<string, string>;
}

/** The broker every test file shares: KAFKA_BROKERS (set by global setup) or the local one on 9092. */
export async function sharedBrokers(): Promise<string[]> {
  const given = process.env.KAFKA_BROKERS?.split(',').map((b) => b.trim()).filter(Boolean);
  if (given && given.length > 0) return given;
  return (await ensureKafka({ dataDir: resolve('.data') })).brokers;
}

/**
 * A broker of the test's own, on its own port and data folder, for tests that stop and restart
 * it: the shared broker other files use in parallel is never disturbed.
 */
export function privateBroker(name: string, port: number): { options: KafkaOptions; start: () => Promise<string[]>; stop: () => Promise<void> } {
  const options: KafkaOptions = { dataDir: resolve('.data', name), port };
  return {
    options,
    start: async () => (await ensureKafka(options)).brokers,
    stop: async () => { await stopKafka(options); },
  };
}

/** `test/integration/outbox-relay.test.ts` → `t.<run id>.outbox-relay.`: unique per run and per file. */
export function topicPrefixFor(file: string): string {
  const runId = process.env.TEST_RUN_ID ?? `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const stem = basename(file).replace(/\.test\.ts$/, '').replace(/[^a-zA-Z0-9-]+/g, '-');
  return `t.${runId}.${stem}.`;
}

function headerStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.map(String).join(',') : String(value);
  }
  return out;
}

/**
 * Every record of a topic from the beginning up to the end offsets seen at the call, in partition
 * and offset order. Uses a throwaway consumer group so it never moves anyone else's offsets.
 */
export async function readTopic(brokers: string[], topic: string, timeoutMs = 30_000): Promise<TopicRecord[]> {
  silenceKafkajsTimerWarning();
  // Quiet: a fresh group on a fresh broker meets "coordinator loading" and kafkajs retries it itself.
  const kafka = new Kafka({ clientId: 'test-read-topic', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map<number, bigint>();
  try {
    for (const p of await admin.fetchTopicOffsets(topic)) {
      if (BigInt(p.high) > BigInt(p.low)) ends.set(p.partition, BigInt(p.high));
    }
  } finally {
    await admin.disconnect();
  }
  if (ends.size === 0) return [];
  const records: TopicRecord[] = [];
  const seen = new Set<string>();
  const consumer = kafka.consumer({ groupId: `test-read-${randomBytes(6).toString('hex')}`, allowAutoTopicCreation: false });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`readTopic(${topic}) timed out after ${timeoutMs} ms`)), timeoutMs);
      consumer.run({
        eachMessage: async ({ partition, message }) => {
          const end = ends.get(partition);
          if (end === undefined || BigInt(message.offset) >= end) return;
          // A rebalance while reading makes kafkajs fetch some records again: the same partition
          // and offset is the same record, not a duplicate on the topic.
          const position = `${partition}:${message.offset}`;
          if (seen.has(position)) return;
          seen.add(position);
          records.push({
            partition,
            offset: message.offset,
            key: message.key?.toString('utf8') ?? null,
            value: message.value,
            headers: headerStrings(message.headers),
          });
          if (BigInt(message.offset) + 1n >= end) ends.delete(partition);
          if (ends.size === 0) {
            clearTimeout(timer);
            done();
          }
        },
      }).catch(fail);
    });
  } finally {
    await consumer.disconnect();
  }
  return records.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
}
