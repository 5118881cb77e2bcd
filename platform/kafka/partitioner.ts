// The producer's partitioner: Kafka's default (Java's murmur2 of the key, made positive, modulo the partition count), in 32-bit integer arithmetic.
import { Partitioners } from 'kafkajs';
import type { ICustomPartitioner } from 'kafkajs';

const M = 0x5bd1e995;
const SEED = 0x9747b28c;

/**
 * Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2) of `data`, as a signed 32-bit
 * integer. kafkajs computes the same with a 64-bit Long emulation, which cost more than a
 * microsecond per 4 bytes of key (bench/results/): Math.imul is Java's int multiply.
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = SEED ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  switch (length & 3) {
    case 3:
      h ^= data[whole + 2]! << 16;
    // falls through
    case 2:
      h ^= data[whole + 1]! << 8;
    // falls through
    case 1:
      h ^= data[whole]!;
      h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  return h ^ (h >>> 15);
}

/** The partition of a keyed record among `partitions`, as the Java client (and kafkajs) picks it. */
export function partitionOf(key: string | Uint8Array, partitions: number): number {
  return (murmur2(typeof key === 'string' ? Buffer.from(key, 'utf8') : key) & 0x7fffffff) % partitions;
}

/**
 * kafkajs' DefaultPartitioner, the key's hash computed by murmur2 above: a keyed message goes to
 * the partition the Java client (and kafkajs) would choose, so every producer of a topic agrees.
 * Messages with a partition or without a key are left to kafkajs' own.
 */
export const KafkaDefaultPartitioner: ICustomPartitioner = () => {
  const unkeyed = Partitioners.DefaultPartitioner();
  return (args) => {
    const { message, partitionMetadata } = args;
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    if (message.key === null || message.key === undefined) return unkeyed(args);
    return partitionOf(message.key, partitionMetadata.length);
  };
};
