// Which of a send's messages Kafka's answer leaves unacknowledged: those the relay must send again before it marks anything sent.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TopicMessages } from 'kafkajs';
import { unacknowledged } from '../../consumers/relay/messages.ts';

const message = (key: string, partition: number) => ({ key, value: key, partition });

const sent: TopicMessages[] = [
  { topic: 'p.catalog.events.v1', messages: [message('a', 0), message('b', 1), message('c', 2), message('d', 1)] },
  { topic: 'p.catalog.items.v1', messages: [message('a', 0), message('b', 1)] },
];

test('an answer that acknowledges every partition sent to leaves nothing', () => {
  const answer = [0, 1, 2].map((partition) => ({ topicName: 'p.catalog.events.v1', partition, errorCode: 0 }))
    .concat([0, 1].map((partition) => ({ topicName: 'p.catalog.items.v1', partition, errorCode: 0 })));
  assert.deepEqual(unacknowledged(sent, answer), []);
});

test('the messages of a partition missing from the answer are left, in their order, topic by topic', () => {
  // kafkajs resolved after the broker leading events partition 1 and items partition 0 had moved
  // them to a broker that had already answered: neither is in the answer.
  const answer = [
    { topicName: 'p.catalog.events.v1', partition: 0, errorCode: 0 },
    { topicName: 'p.catalog.events.v1', partition: 2, errorCode: 0 },
    { topicName: 'p.catalog.items.v1', partition: 1, errorCode: 0 },
  ];
  assert.deepEqual(unacknowledged(sent, answer), [
    { topic: 'p.catalog.events.v1', messages: [message('b', 1), message('d', 1)] },
    { topic: 'p.catalog.items.v1', messages: [message('a', 0)] },
  ]);
});

test('a partition is acknowledged on its own topic only, and only without an error code', () => {
  const answer = [
    { topicName: 'p.catalog.items.v1', partition: 2, errorCode: 0 },
    { topicName: 'p.catalog.events.v1', partition: 1, errorCode: 6 },
    { topicName: 'p.catalog.events.v1', partition: 0, errorCode: 0 },
  ];
  assert.deepEqual(unacknowledged(sent, answer).map(({ topic, messages }) => [topic, messages.map((m) => m.key)]), [
    ['p.catalog.events.v1', ['b', 'c', 'd']],
    ['p.catalog.items.v1', ['a', 'b']],
  ]);
});

test('an empty answer leaves every message', () => {
  assert.deepEqual(unacknowledged(sent, []), sent);
});
