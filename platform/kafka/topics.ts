// The Kafka topics of the service (DESIGN §1), their prefixed names, and creating the missing ones.
import type { Admin } from 'kafkajs';
import pRetry from 'p-retry';

/** Logical topic names, without the environment prefix; outbox rows store these. */
export const TOPICS = {
  /** Every domain event (the webhook body shape); key = the resource (domain/events/outbox.ts). The public stream. */
  events: 'catalog.events.v1',
  /** The item changelog: each item's latest state, a tombstone once deleted; key = its identity. Compacted. */
  items: 'catalog.items.v1',
  /** Import jobs to process; key = jobId. */
  imports: 'catalog.imports.v1',
  /** Media assets to fetch; key = sourceUrlHash. */
  media: 'catalog.media.v1',
  /** Webhook deliveries due now; key = webhook id. */
  webhookDeliveries: 'catalog.webhook-deliveries.v1',
} as const;

export type LogicalTopic = (typeof TOPICS)[keyof typeof TOPICS];

export const LOGICAL_TOPICS: readonly LogicalTopic[] = Object.freeze(Object.values(TOPICS));

// Keys pick the partition, so per-resource order holds with any count; 3 lets a consumer group
// spread over a few processes without a repartition later.
export const DEFAULT_PARTITIONS = 3;

/**
 * Topic configuration beyond the broker's defaults: the changelog keeps the latest record of
 * each key (and a deleted item's tombstone for the broker's delete.retention.ms, so a reader from
 * the start sees deletes), whatever its age.
 */
const TOPIC_CONFIG: Readonly<Partial<Record<LogicalTopic, Readonly<Record<string, string>>>>> = {
  [TOPICS.items]: { 'cleanup.policy': 'compact' },
};

/**
 * The real topic name: the prefix (config.kafkaTopicPrefix) is used verbatim, so it carries its own
 * separator, e.g. `staging.` or a per-test-run `t1a2b3.`.
 */
export function topicName(prefix: string, topic: string): string {
  return `${prefix}${topic}`;
}

/** Every topic of the service under a prefix. */
export function allTopicNames(prefix: string): string[] {
  return LOGICAL_TOPICS.map((topic) => topicName(prefix, topic));
}

/** The configuration a topic (full name) is created with, from its logical name. */
function configOf(topic: string): Array<{ name: string; value: string }> {
  const logical = LOGICAL_TOPICS.find((name) => topic.endsWith(name));
  return Object.entries((logical && TOPIC_CONFIG[logical]) ?? {}).map(([name, value]) => ({ name, value }));
}

export interface EnsureTopicsOptions {
  readonly numPartitions?: number;
  /** 1 for the local single-node broker; production clusters would pass 3. */
  readonly replicationFactor?: number;
}

/**
 * Creates the topics (full names) that do not exist yet and waits for their leaders, so a producer
 * can write at once. Returns the names it created. Safe to race: a topic another process created
 * meanwhile counts as existing.
 */
export async function ensureTopics(admin: Admin, topics: readonly string[], options: EnsureTopicsOptions = {}): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = [...new Set(topics)].filter((topic) => !existing.has(topic));
  if (missing.length === 0) return [];
  // kafkajs's own wait (waitForLeaders) retries only LEADER_NOT_AVAILABLE, but a KRaft broker
  // answers UNKNOWN_TOPIC_OR_PARTITION for a topic it created a moment ago; so wait here.
  await admin.createTopics({
    waitForLeaders: false,
    topics: missing.map((topic) => ({
      topic,
      numPartitions: options.numPartitions ?? DEFAULT_PARTITIONS,
      replicationFactor: options.replicationFactor ?? 1,
      configEntries: configOf(topic),
    })),
  });
  await waitForLeaders(admin, missing);
  return missing;
}

/** Resolves once every partition of the topics has a leader; gives up after about 30 s. */
async function waitForLeaders(admin: Admin, topics: string[]): Promise<void> {
  await pRetry(
    async () => {
      const metadata = await admin.fetchTopicMetadata({ topics });
      const leaderless = metadata.topics.filter((topic) => topic.partitions.length === 0 || topic.partitions.some((p) => p.leader < 0));
      if (leaderless.length > 0) throw new Error(`no leader yet for ${leaderless.map((topic) => topic.name).join(', ')}`);
    },
    {
      retries: 60,
      minTimeout: 100,
      maxTimeout: 1000,
      maxRetryTime: 30_000,
      // kafkajs marks the errors a retry cannot cure (bad topic name, no authorization).
      shouldRetry: ({ error }) => (error as { retriable?: boolean }).retriable !== false,
    },
  );
}
