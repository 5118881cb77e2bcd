// kafkajs' log entries as an operator reads them in pino: errors with their type and cause, recovered faults at warn.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { logLevel } from 'kafkajs';
import pino from 'pino';
import { kafkajsLogCreator } from '../../platform/kafka/client.ts';

/** A logger writing JSON lines into an array, and the kafkajs log function on top of it. */
function capture() {
  const lines: Array<Record<string, any>> = [];
  const sink = new Writable({ write(chunk, _encoding, done) { lines.push(JSON.parse(chunk.toString())); done(); } });
  const log = kafkajsLogCreator(pino({ level: 'debug' }, sink))();
  return { lines, log };
}

const entry = (level: logLevel, message: string, extra: Record<string, unknown>) =>
  ({ namespace: 'Runner', level, label: 'ERROR', log: { timestamp: new Date().toISOString(), logger: 'kafkajs', message, ...extra } });

test('a handler error is written as err with its type, message and cause, not [object Object]', async () => {
  const { lines, log } = capture();
  const failure = new TypeError('the batch could not be read', { cause: new Error('underneath') });
  log(entry(logLevel.ERROR, 'Error when calling eachBatch', { topic: 't', partition: 0, stack: failure.stack, error: failure }));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.level, 50);
  assert.equal(lines[0]!.err.type, 'TypeError');
  assert.match(lines[0]!.err.message, /^the batch could not be read/);
  assert.match(lines[0]!.err.stack, /caused by: Error: underneath/);
  assert.equal(lines[0]!.error, undefined);
  assert.doesNotMatch(JSON.stringify(lines[0]), /\[object Object\]/);
});

test('faults kafkajs or the service recover from are warnings: a handler that lost Postgres, a re-join, a consumer crashed by a lost broker and its restart', async () => {
  const { lines, log } = capture();
  const lost = Object.assign(new Error('Connection terminated unexpectedly'), { code: '57P01' });
  log(entry(logLevel.ERROR, 'Error when calling eachBatch', { error: lost }));
  log(entry(logLevel.ERROR, 'The group is rebalancing, re-joining the group', {}));
  log(entry(logLevel.ERROR, 'Crash: KafkaJSNonRetriableError: Connection error: connect ECONNREFUSED 127.0.0.1:9092', { groupId: 'g' }));
  log(entry(logLevel.ERROR, 'Crash: KafkaJSNoBrokerAvailableError: No broker available', { groupId: 'g' }));
  log(entry(logLevel.ERROR, 'Crash: KafkaJSConnectionClosedError: Closed connection', { groupId: 'g' }));
  log(entry(logLevel.ERROR, 'Restarting the consumer in 300ms', { groupId: 'g' }));
  log(entry(logLevel.ERROR, 'Error when calling eachBatch', { error: new Error('a bug') }));
  log(entry(logLevel.ERROR, 'Crash: KafkaJSNonRetriableError: Topic authorization failed', { groupId: 'g' }));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(lines.map((line) => line.level), [40, 40, 40, 40, 40, 40, 50, 50]);
});

test('a record the broker refuses for good is not an error of kafkajs\' own: the relay that parks it logs it once', async () => {
  const { lines, log } = capture();
  const producer = (message: string) => ({ ...entry(logLevel.ERROR, message, { retryCount: 0, retryTime: 300 }), namespace: 'Producer' });
  log(producer('The request included a message larger than the max message size the server will accept'));
  log(producer('Failed to send messages: This message has failed its CRC checksum, exceeds the valid size, or is otherwise corrupt'));
  log(producer('The producer is not connected'));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(lines.map((line) => line.level), [20, 20, 50]);
});

test("a send's retries (a broker away, a leader moving, too few replicas in sync) are the relay's to report, once an episode", async () => {
  const { lines, log } = capture();
  const producer = (message: string) => ({ ...entry(logLevel.ERROR, message, { retryCount: 1, retryTime: 600 }), namespace: 'Producer' });
  log(producer('Failed to send messages: Connection error: connect ECONNREFUSED 127.0.0.1:19092'));
  log(producer('Failed to send messages: This server is not the leader for that topic-partition'));
  log(producer('Failed to send messages: Messages are rejected since there are fewer in-sync replicas than required'));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(lines.map((line) => line.level), [20, 20, 20]);
});
