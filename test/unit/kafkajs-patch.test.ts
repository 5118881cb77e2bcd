// kafkajs as patched by patches/kafkajs+2.2.4.patch: the record batches it encodes are byte for byte what it encoded before.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { test } from 'node:test';

const require = createRequire(import.meta.url);
const Encoder = require('kafkajs/src/protocol/encoder.js');
const Decoder = require('kafkajs/src/protocol/decoder.js');
const crc32C: (buffer: Buffer) => number = require('kafkajs/src/protocol/recordBatch/crc32C/index.js');
// kafkajs' own CRC-32C in JavaScript, which the patch no longer calls: the reference.
const javascriptCrc32C: (buffer: Buffer) => number = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js');
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js');
const decodeRecordBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder.js');
const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js');

test('the patch is applied: the checksum is no longer the JavaScript one, and a varint is written without a buffer of its own', () => {
  assert.doesNotMatch(String(crc32C), /unsigned/);
  assert.doesNotMatch(String(Encoder.prototype.writeUVarInt), /Buffer\.from/);
  assert.doesNotMatch(String(Encoder.prototype.ensureAvailable), /Buffer\.alloc\(/);
});

test('the CRC-32C is the JavaScript one for every length, also of a slice in the middle of a pooled buffer', () => {
  assert.equal(crc32C(Buffer.from('123456789')), 0xe3069283);
  for (let length = 0; length < 3000; length += 13) {
    const pooled = Buffer.allocUnsafe(length + 11);
    randomBytes(length + 11).copy(pooled);
    const slice = pooled.subarray(5, 5 + length);
    assert.equal(crc32C(slice), javascriptCrc32C(slice), `length ${length}, offset ${slice.byteOffset}`);
  }
});

test('varints round-trip at every boundary of their length', () => {
  const signed = [0, 1, -1, 63, 64, -64, -65, 127, 128, 8191, 8192, 2 ** 20, 2 ** 27, 2 ** 28, 2 ** 31 - 1, -(2 ** 31)];
  for (const value of signed) {
    const decoder = new Decoder(new Encoder().writeVarInt(value).writeInt8(7).buffer);
    assert.equal(decoder.readVarInt(), value);
    assert.equal(decoder.readInt8(), 7, `the byte after ${value}`);
  }
  for (const value of [0, 127, 128, 16383, 16384, 2 ** 21, 2 ** 28, 2 ** 32 - 1]) {
    assert.equal(new Decoder(new Encoder().writeUVarInt(value).buffer).readUVarInt(), value);
  }
});

test('a record batch decodes to its records, and carries the checksum of its bytes', async () => {
  const messages = Array.from({ length: 300 }, (_, i) => ({
    key: JSON.stringify(['0192f5e0-1a2b-7c3d-8e4f-5a6b7c8d9e0f', 'erp', `SKU-ü 🚀 ${i}`]),
    // From empty to past several doublings of an encoder's buffer.
    value: 'é"x'.repeat(i * 7),
    headers: { 'event-type': 'item.created', 'schema-version': '1', 'event-id': `id-${i}` },
  }));
  const records = messages.map((message, i) => Record({ ...message, offsetDelta: i, timestampDelta: i * 1000 }));
  const encoded = (await RecordBatch({ records, firstTimestamp: 1_700_000_000_000, maxTimestamp: 1_700_000_299_000, lastOffsetDelta: 299 })).buffer;
  // firstOffset (8) length (4) partitionLeaderEpoch (4) magic (1) crc (4), then the bytes the crc covers.
  assert.equal(encoded.readUInt32BE(17), javascriptCrc32C(encoded.subarray(21)));
  const batch = await decodeRecordBatch(new Decoder(encoded));
  assert.equal(batch.records.length, messages.length);
  batch.records.forEach((record: { key: Buffer; value: Buffer; headers: Record<string, Buffer>; timestamp: string; offset: string }, i: number) => {
    assert.equal(record.key.toString(), messages[i]!.key);
    assert.equal(record.value.toString(), messages[i]!.value);
    assert.deepEqual(Object.fromEntries(Object.entries(record.headers).map(([k, v]) => [k, v.toString()])), messages[i]!.headers);
    assert.equal(record.timestamp, String(1_700_000_000_000 + i * 1000));
    assert.equal(record.offset, String(i));
  });
});
