// A private three-node KRaft cluster (replication factor 3, min.insync.replicas 2) losing nodes: a killed leader is replaced while acks=all writes go on, a wiped node copies every partition back.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { silenceKafkajsTimerWarning } from '../../platform/kafka/kafkajs-quirks.ts';
import { privateCluster, topicPrefixFor } from '../helpers/kafka.ts';
import { eventually } from '../helpers/media.ts';

const cluster = privateCluster('kafka-cluster');
const topic = `${topicPrefixFor(import.meta.url)}replicated`;
const PARTITIONS = [0, 1, 2];
// Bounded waits: a dead node is fenced after the broker session timeout (9 s), and a restarted one
// catches up in seconds, but four JVMs on a busy 2-core machine can take several times that.
const WAIT_MS = 60_000;

let brokers: string[];

const kafkaClient = () => {
  silenceKafkajsTimerWarning();
  return new Kafka({ clientId: 'test-kafka-cluster', brokers, logLevel: logLevel.NOTHING });
};
const seconds = (since: number) => `${Math.round((Date.now() - since) / 100) / 10} s`;
const logDirsOf = (nodeId: number) => join(cluster.dataDir, 'kafka-cluster', `node-${nodeId}`, 'log-dirs');
const partitionFolders = (nodeId: number) => existsSync(logDirsOf(nodeId))
  ? readdirSync(logDirsOf(nodeId)).filter((name) => name.startsWith(`${topic}-`)).sort() : [];

/** Pids of the Kafka nodes whose command line names the folder (their properties file lives in it). */
function nodeProcessesOf(folder: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes('kafka.Kafka') && cmdline.includes(folder)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** One record to every partition, acknowledged by every in-sync replica (acks=all), at least two of them. */
async function sendToEveryPartition(label: string): Promise<void> {
  const producer = kafkaClient().producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    const answers = await producer.send({ topic, acks: -1, messages: PARTITIONS.map((partition) => ({ partition, key: `${label}-${partition}`, value: label })) });
    assert.deepEqual(answers.map((a) => a.partition).sort(), PARTITIONS);
    assert.ok(answers.every((a) => a.errorCode === 0), JSON.stringify(answers));
  } finally {
    await producer.disconnect();
  }
}

/** Waits until every partition's in-sync replicas satisfy `holds`; metadata asked while nodes fail may fail too. */
async function untilEveryIsr(what: string, holds: (isr: number[]) => boolean): Promise<void> {
  await eventually(async () => {
    const isrs = await cluster.isrOf(topic).catch(() => undefined);
    return isrs && isrs.size === PARTITIONS.length && [...isrs.values()].every(holds) ? true : undefined;
  }, what, WAIT_MS);
}

before(async () => {
  const began = Date.now();
  brokers = await cluster.start();
  process.stdout.write(`# three nodes started in ${seconds(began)}\n`);
  const admin = kafkaClient().admin();
  await admin.connect();
  try {
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: PARTITIONS.length, replicationFactor: 3 }] });
  } finally {
    await admin.disconnect();
  }
});

after(async () => {
  await cluster.remove();
  assert.deepEqual(nodeProcessesOf(cluster.dataDir), [], 'no Kafka node of the cluster\'s folder is left running');
});

test('every partition has three replicas in sync, and a send with acks=all is acknowledged', async () => {
  assert.equal(brokers.length, 3);
  await untilEveryIsr('three replicas in sync everywhere', (isr) => isr.length === 3);
  await sendToEveryPartition('all-up');
});

test('the leader of partition 0 killed (-9): another node leads it, acks=all sends go on, and the restarted node is back in sync', async () => {
  const leader = (await cluster.leaderOf(topic)).get(0);
  assert.ok(leader !== undefined && leader > 0, `partition 0 has a leader (${leader})`);
  const killedAt = Date.now();
  await cluster.kill(leader);
  const next = await eventually(async () => {
    const now = (await cluster.leaderOf(topic).catch(() => undefined))?.get(0);
    return now !== undefined && now > 0 && now !== leader ? now : undefined;
  }, `a new leader of partition 0 after node ${leader}`, WAIT_MS);
  process.stdout.write(`# partition 0 moved from node ${leader} to node ${next} ${seconds(killedAt)} after the kill\n`);
  await untilEveryIsr(`node ${leader} out of every ISR`, (isr) => !isr.includes(leader) && isr.length >= 2);
  await sendToEveryPartition('one-killed');

  const restartedAt = Date.now();
  await cluster.restart(leader);
  await untilEveryIsr(`node ${leader} back in every ISR`, (isr) => isr.includes(leader) && isr.length === 3);
  process.stdout.write(`# node ${leader} back in every ISR ${seconds(restartedAt)} after its restart\n`);
  await sendToEveryPartition('killed-node-back');
});

test('a wiped node (its log folders deleted, formatted again) copies every partition back once restarted', async () => {
  const node = (await cluster.leaderOf(topic)).get(1);
  assert.ok(node !== undefined && node > 0, `partition 1 has a leader (${node})`);
  assert.deepEqual(partitionFolders(node), PARTITIONS.map((p) => `${topic}-${p}`), 'the node holds every partition before');
  await cluster.wipe(node);
  assert.deepEqual(partitionFolders(node), [], 'the wipe left no partition on the node');
  await untilEveryIsr(`node ${node} out of every ISR`, (isr) => !isr.includes(node) && isr.length >= 2);
  await sendToEveryPartition('one-wiped');

  const restartedAt = Date.now();
  await cluster.restart(node);
  await untilEveryIsr(`the wiped node ${node} back in every ISR`, (isr) => isr.includes(node) && isr.length === 3);
  process.stdout.write(`# wiped node ${node} re-replicated into every ISR ${seconds(restartedAt)} after its restart\n`);
  assert.deepEqual(partitionFolders(node), PARTITIONS.map((p) => `${topic}-${p}`), 'the node holds every partition again');
  await sendToEveryPartition('wiped-node-back');
});
