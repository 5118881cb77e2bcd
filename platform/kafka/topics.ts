// The Kafka topics of the service, their prefixed names and configuration: created when missing, reconciled when they exist (docs/design.md, "Kafka topics").
import kafkajs from 'kafkajs';
import type { Admin } from 'kafkajs';
import pRetry from 'p-retry';
import type { Config } from '../config/config.ts';

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

// Not importable by name: Node's ESM view of kafkajs' CommonJS exports stops before them.
const { ConfigResourceTypes, ConfigSource } = kafkajs;

const DAY_MS = 24 * 3600_000;

/** Topic configuration entries (Kafka's names and string values). */
export type TopicConfig = Readonly<Record<string, string>>;

/**
 * What each topic is created with and kept at. The public topics keep the producer's timestamp
 * (when the change committed) whatever the broker's default; the events topic keeps records as
 * long as GET /events keeps events; the changelog keeps each key's latest record for ever, a
 * tombstone for the configured days, and every record for the configured lag before compaction.
 */
export function topicConfigs(config: Pick<Config, 'eventRetentionDays' | 'kafkaTopics'>): Readonly<Record<LogicalTopic, TopicConfig>> {
  const work = { 'cleanup.policy': 'delete' };
  return {
    [TOPICS.events]: {
      'cleanup.policy': 'delete', 'retention.ms': String(config.eventRetentionDays * DAY_MS), 'message.timestamp.type': 'CreateTime',
    },
    [TOPICS.items]: {
      'cleanup.policy': 'compact',
      'delete.retention.ms': String(config.kafkaTopics.tombstoneRetentionDays * DAY_MS),
      'min.compaction.lag.ms': String(config.kafkaTopics.minCompactionLagHours * 3600_000),
      'message.timestamp.type': 'CreateTime',
    },
    [TOPICS.imports]: work,
    [TOPICS.media]: work,
    [TOPICS.webhookDeliveries]: work,
  };
}

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

/** The service's topics as they should be: full names and configuration, partitions and replicas of new ones. */
export interface TopicPlan {
  readonly topics: ReadonlyMap<string, TopicConfig>;
  readonly partitions: number;
  /** -1: the cluster's default.replication.factor. */
  readonly replicationFactor: number;
}

export function topicPlan(prefix: string, config: Pick<Config, 'eventRetentionDays' | 'kafkaTopics'>): TopicPlan {
  const configs = topicConfigs(config);
  return {
    topics: new Map(LOGICAL_TOPICS.map((topic) => [topicName(prefix, topic), configs[topic]])),
    partitions: config.kafkaTopics.partitions,
    replicationFactor: config.kafkaTopics.replicationFactor,
  };
}

/** What ensureTopics did and found. */
export interface TopicsReport {
  readonly created: string[];
  /** Existing topics whose configuration it changed, with the entries it changed. */
  readonly reconciled: Array<{ topic: string; entries: string[] }>;
  /** Existing topics with fewer partitions than the plan: left as they are (docs/design.md, "Kafka topics"). */
  readonly fewerPartitions: Array<{ topic: string; partitions: number }>;
}

/**
 * Creates the missing topics with the plan's partitions, replicas and configuration, and waits
 * for their leaders so a producer can write at once; brings the configuration of existing ones
 * to the plan. Never changes a partition count. Safe to race: a topic another process created
 * meanwhile counts as existing, and reconciling twice sets the same values.
 */
export async function ensureTopics(admin: Admin, plan: TopicPlan): Promise<TopicsReport> {
  const names = [...plan.topics.keys()];
  const existing = new Set(await admin.listTopics());
  const missing = names.filter((topic) => !existing.has(topic));
  if (missing.length > 0) {
    // kafkajs's own wait (waitForLeaders) retries only LEADER_NOT_AVAILABLE, but a KRaft broker
    // answers UNKNOWN_TOPIC_OR_PARTITION for a topic it created a moment ago; so wait here.
    await admin.createTopics({
      waitForLeaders: false,
      topics: missing.map((topic) => ({
        topic,
        numPartitions: plan.partitions,
        replicationFactor: plan.replicationFactor,
        configEntries: entriesOf(plan.topics.get(topic)!),
      })),
    });
    await waitForLeaders(admin, missing);
  }
  const present = names.filter((topic) => existing.has(topic));
  if (present.length === 0) return { created: missing, reconciled: [], fewerPartitions: [] };
  const metadata = await admin.fetchTopicMetadata({ topics: present });
  const fewerPartitions = metadata.topics.filter((topic) => topic.partitions.length < plan.partitions)
    .map((topic) => ({ topic: topic.name, partitions: topic.partitions.length }));
  return { created: missing, reconciled: await reconcileConfigs(admin, present, plan), fewerPartitions };
}

const entriesOf = (config: TopicConfig) => Object.entries(config).map(([name, value]) => ({ name, value }));

/**
 * Sets the planned entries where an existing topic differs. AlterConfigs (the only kind kafkajs
 * sends) replaces every override of a topic, so the overrides set by others are sent along.
 */
async function reconcileConfigs(admin: Admin, topics: string[], plan: TopicPlan): Promise<TopicsReport['reconciled']> {
  const described = await admin.describeConfigs({
    includeSynonyms: false, resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
  });
  const reconciled: TopicsReport['reconciled'] = [];
  for (const resource of described.resources) {
    const wanted = plan.topics.get(resource.resourceName)!;
    const current = new Map(resource.configEntries.map((entry) => [entry.configName, entry]));
    const entries = Object.keys(wanted).filter((name) => current.get(name)?.configValue !== wanted[name]);
    if (entries.length === 0) continue;
    const others = resource.configEntries
      .filter((entry) => entry.configSource === ConfigSource.TOPIC_CONFIG && !(entry.configName in wanted))
      .map((entry) => ({ name: entry.configName, value: entry.configValue }));
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: resource.resourceName, configEntries: [...others, ...entriesOf(wanted)] }],
    });
    reconciled.push({ topic: resource.resourceName, entries });
  }
  return reconciled;
}

/**
 * p-retry gives up at once on a TypeError (a bug, in its view), but kafkajs throws one while a
 * partition's leader moves (fetchTopicOffsets: "Cannot destructure property 'partitions' of
 * 'high.pop(...)'", an offsets answer without the partition). The same call succeeds once the
 * leader settles: retried like any other error.
 */
function retriableTypeError(error: unknown): never {
  if (error instanceof TypeError) throw new Error(`topic offsets not readable yet: ${error.message}`, { cause: error });
  throw error;
}

/**
 * Resolves once every partition of the topics has a leader that serves it; gives up after about
 * 30 s. Metadata names a leader before the broker has loaded the partition (NOT_LEADER_FOR_PARTITION
 * for a moment after, the longer the more partitions a fresh broker loads): asking each
 * partition's offsets waits that out too.
 */
async function waitForLeaders(admin: Admin, topics: string[]): Promise<void> {
  await pRetry(
    async () => {
      try {
        const metadata = await admin.fetchTopicMetadata({ topics });
        const leaderless = metadata.topics.filter((topic) => topic.partitions.length === 0 || topic.partitions.some((p) => p.leader < 0));
        if (leaderless.length > 0) throw new Error(`no leader yet for ${leaderless.map((topic) => topic.name).join(', ')}`);
        await Promise.all(topics.map((topic) => admin.fetchTopicOffsets(topic)));
      } catch (error) {
        retriableTypeError(error);
      }
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
