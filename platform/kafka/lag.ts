// The lag of the consumer groups a process runs: messages on their topics that the group has not committed yet.
import type { KafkaClient } from './client.ts';

export interface GroupLag {
  readonly group: string;
  readonly topic: string;
  /** Sum over the topic's partitions of the high watermark less the group's committed offset. */
  readonly messages: number;
}

/** One admin round trip per group; a partition the group never committed counts from the low watermark. */
export async function consumerLag(kafka: KafkaClient): Promise<GroupLag[]> {
  const running = kafka.running();
  if (running.length === 0) return [];
  return kafka.withAdmin(async (admin) => {
    const lags: GroupLag[] = [];
    for (const { groupId, topics } of running) {
      const committed = await admin.fetchOffsets({ groupId, topics: [...topics] });
      for (const { topic, partitions } of committed) {
        const ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, p]));
        let messages = 0;
        for (const { partition, offset } of partitions) {
          const end = ends.get(partition);
          if (!end) continue;
          const from = Number(offset) >= 0 ? Number(offset) : Number(end.low);
          messages += Math.max(0, Number(end.high) - from);
        }
        lags.push({ group: groupId, topic, messages });
      }
    }
    return lags;
  });
}
