// The producer's partitioner picks, for every key, the partition kafkajs' DefaultPartitioner (Java's murmur2) picks.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { Partitioners } from 'kafkajs';
import type { PartitionMetadata } from 'kafkajs';
import { KafkaDefaultPartitioner, murmur2 } from '../../platform/kafka/partitioner.ts';

const metadata = (count: number): PartitionMetadata[] =>
  Array.from({ length: count }, (_, partitionId) => ({ partitionId, leader: 0, replicas: [0], isr: [0], offlineReplicas: [], partitionErrorCode: 0 }));

test('murmur2 gives the values of the Java client for known keys', () => {
  // From org.apache.kafka.common.utils.UtilsTest.testMurmur2.
  const cases: Array<[string, number]> = [
    ['21', -973932308], ['foobar', -790332482], ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829], ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
  ];
  for (const [key, hash] of cases) assert.equal(murmur2(Buffer.from(key)), hash, key);
});

test("every key, of every length and alphabet, goes where kafkajs' DefaultPartitioner sends it", () => {
  const ours = KafkaDefaultPartitioner();
  const theirs = Partitioners.DefaultPartitioner();
  const keys: Array<string | Buffer> = ['', 'a', 'ab', 'abc', JSON.stringify(['0192f5e0-1a2b-7c3d-8e4f-5a6b7c8d9e0f', 'erp', 'SKU-ü 🚀 "x"'])];
  for (let n = 0; n < 3000; n++) {
    const bytes = randomBytes(n % 97);
    keys.push(n % 2 ? bytes : bytes.toString('latin1') + (n % 3 ? 'é' : '🚀'));
  }
  for (const key of keys) {
    for (const partitions of [1, 3, 7, 12]) {
      const args = { topic: 't', partitionMetadata: metadata(partitions), message: { key, value: null } };
      assert.equal(ours(args), theirs(args), `key ${JSON.stringify(key)} over ${partitions} partitions`);
    }
  }
});

test('a message that names its partition keeps it', () => {
  const args = { topic: 't', partitionMetadata: metadata(3), message: { key: 'k', value: null, partition: 2 } };
  assert.equal(KafkaDefaultPartitioner()(args), 2);
});
