// Configuration is read once, validated, and frozen; bad values stop the start with a clear message.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../platform/config/config.ts';

const base = () => ({ DATA_DIR: mkdtempSync(join(tmpdir(), 'catalog-config-')) });

test('defaults follow DESIGN §5', () => {
  const config = loadConfig(base());
  assert.equal(config.port, 8080);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.publicBaseUrl, 'http://127.0.0.1:8080');
  assert.equal(config.role, 'all');
  assert.equal(config.databaseUrl, 'postgres://postgres@127.0.0.1:5432/catalog');
  assert.equal(config.kafkaBrokers, undefined);
  assert.equal(config.kafkaTopicPrefix, '');
  assert.equal(config.storageDriver, 'local');
  assert.deepEqual(config.webhookRetryDelaysMs, [0, 5000, 25000, 120000, 600000, 1800000, 7200000, 21600000]);
  assert.equal(config.webhookTimeoutMs, 5000);
  assert.equal(config.webhookDisableAfter, 20);
  assert.equal(config.webhookAllowHttp, false);
  assert.equal(config.outboundAllowPrivate, false);
  assert.equal(config.logLevel, 'info');
  assert.ok(Object.isFrozen(config));
});

test('a generated signing secret is kept in the data folder and reused', () => {
  const env = base();
  const first = loadConfig(env).signingSecret;
  assert.match(first, /^[0-9a-f]{64}$/);
  assert.equal(loadConfig(env).signingSecret, first);
});

test('values are parsed and checked', () => {
  const config = loadConfig({ ...base(), KAFKA_BROKERS: 'a:9092, b:9092', WEBHOOK_ALLOW_HTTP: 'true', PORT: '0', ROLE: 'api' });
  assert.deepEqual(config.kafkaBrokers, ['a:9092', 'b:9092']);
  assert.equal(config.webhookAllowHttp, true);
  assert.equal(config.role, 'api');
  for (const [name, value] of [['PORT', 'eighty'], ['ROLE', 'worker'], ['WEBHOOK_RETRY_DELAYS_MS', '1,2,3'],
    ['LOG_LEVEL', 'loud'], ['OUTBOUND_ALLOW_PRIVATE', 'maybe'], ['STORAGE_DRIVER', 'ftp'], ['SIGNING_SECRET', 'short']]) {
    assert.throws(() => loadConfig({ ...base(), [name!]: value }), (error: Error) => error instanceof ConfigError && error.message.includes(name!));
  }
});
