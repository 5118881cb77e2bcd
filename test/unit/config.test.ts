// Configuration is read once, validated, and frozen; bad values stop the start with a clear message.
import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig, singleMachineSettings } from '../../platform/config/config.ts';
import { secretsKeyWarnings } from '../../platform/config/secrets-key.ts';
import { secretKey } from '../../platform/crypto/secret-box.ts';

const base = () => ({ DATA_DIR: mkdtempSync(join(tmpdir(), 'catalog-config-')) });

test('defaults follow docs/configuration.md', () => {
  const config = loadConfig(base());
  assert.equal(config.port, 8080);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.publicBaseUrl, 'http://127.0.0.1:8080');
  assert.equal(config.role, 'all');
  assert.equal(config.databaseUrl, 'postgres://postgres@127.0.0.1:5432/catalog');
  assert.equal(config.kafkaBrokers, undefined);
  assert.equal(config.kafkaTopicPrefix, '');
  assert.equal(config.kafkaPublicBrokers, undefined);
  assert.deepEqual(config.kafkaTopics, { partitions: 12, replicationFactor: -1, tombstoneRetentionDays: 7, minCompactionLagHours: 24 });
  assert.ok(Object.isFrozen(config.kafkaTopics));
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
  assert.deepEqual([config.opsPort, config.opsHost], [9464, '127.0.0.1'], 'the operations port listens on loopback unless told otherwise');
  for (const [name, value] of [['PORT', 'eighty'], ['OPS_PORT', '65536'], ['ROLE', 'worker'], ['WEBHOOK_RETRY_DELAYS_MS', '1,2,3'],
    ['LOG_LEVEL', 'loud'], ['OUTBOUND_ALLOW_PRIVATE', 'maybe'], ['STORAGE_DRIVER', 'ftp'], ['SIGNING_SECRET', 'short']]) {
    assert.throws(() => loadConfig({ ...base(), [name!]: value }), (error: Error) => error instanceof ConfigError && error.message.includes(name!));
  }
});

test('Kafka settings: the address readers use defaults to the service\'s own, topics take their counts and retentions', () => {
  assert.deepEqual(loadConfig({ ...base(), KAFKA_BROKERS: 'kafka:9092' }).kafkaPublicBrokers, ['kafka:9092']);
  const config = loadConfig({
    ...base(), KAFKA_BROKERS: 'kafka:9092', KAFKA_PUBLIC_BROKERS: 'b1.example.com:9094, b2.example.com:9094', KAFKA_PARTITIONS: '48',
    KAFKA_REPLICATION_FACTOR: '3', CHANGELOG_TOMBSTONE_RETENTION_DAYS: '30', CHANGELOG_MIN_COMPACTION_LAG_HOURS: '0',
  });
  assert.deepEqual(config.kafkaPublicBrokers, ['b1.example.com:9094', 'b2.example.com:9094']);
  assert.deepEqual(config.kafkaTopics, { partitions: 48, replicationFactor: 3, tombstoneRetentionDays: 30, minCompactionLagHours: 0 });
  // A tombstone kept less than a week would be gone before a mirror back from a long weekend reads it.
  for (const [name, value] of [['KAFKA_PARTITIONS', '0'], ['KAFKA_PARTITIONS', '1.5'], ['KAFKA_REPLICATION_FACTOR', '0'],
    ['KAFKA_REPLICATION_FACTOR', '-2'], ['CHANGELOG_TOMBSTONE_RETENTION_DAYS', '6'], ['CHANGELOG_MIN_COMPACTION_LAG_HOURS', '-1']]) {
    assert.throws(() => loadConfig({ ...base(), [name!]: value }), (error: Error) => error instanceof ConfigError && error.message.includes(name!), `${name}=${value}`);
  }
});

test('the read replica: off unless DATABASE_READ_URL is set; its bound, interval and pool checked, its password never echoed', () => {
  const plain = loadConfig(base());
  assert.equal(plain.databaseRead, undefined);
  assert.equal(plain.capacity.apiReadConnections, 10);
  const config = loadConfig({ ...base(), DATABASE_READ_URL: 'postgres://reader:s3cret@standby:5432/catalog', API_DATABASE_READ_CONNECTIONS: '4' });
  assert.deepEqual(config.databaseRead, { url: 'postgres://reader:s3cret@standby:5432/catalog', maxLagMs: 5000, checkIntervalMs: 1000 });
  assert.ok(Object.isFrozen(config.databaseRead));
  assert.equal(config.capacity.apiReadConnections, 4);
  const tuned = loadConfig({ ...base(), DATABASE_READ_URL: 'postgresql://standby/catalog', DATABASE_READ_MAX_LAG_MS: '1500', DATABASE_READ_CHECK_INTERVAL_MS: '100' });
  assert.deepEqual(tuned.databaseRead, { url: 'postgresql://standby/catalog', maxLagMs: 1500, checkIntervalMs: 100 });
  for (const [name, value] of [['DATABASE_READ_MAX_LAG_MS', '-1'], ['DATABASE_READ_MAX_LAG_MS', 'soon'], ['DATABASE_READ_CHECK_INTERVAL_MS', '10'],
    ['API_DATABASE_READ_CONNECTIONS', '0'], ['DATABASE_READ_URL', 'mysql://reader:s3cret@standby/catalog'], ['DATABASE_READ_URL', 'postgres://reader:s3cret@standby:5432/'],
    ['DATABASE_READ_URL', 'reader:s3cret@standby']]) {
    assert.throws(() => loadConfig({ ...base(), [name!]: value }), (error: Error) => error instanceof ConfigError && error.message.includes(name!)
      && !error.message.includes('s3cret'), `${name}=${value}`);
  }
});

test('the secrets key: generated once into the data folder (0600) outside production, and said to be for development only', () => {
  const env = base();
  const first = loadConfig(env).secretsKey;
  assert.equal(first.from, 'generated');
  assert.equal(first.current.length, 32);
  assert.equal(statSync(first.file!).mode & 0o777, 0o600);
  assert.deepEqual(loadConfig(env).secretsKey.current, first.current, 'reused');
  assert.match(secretsKeyWarnings(first)[0]!, new RegExp(`SECRETS_KEY is not set.*key ${secretKey(first.current).id}.*development only`));
  assert.match(singleMachineSettings(loadConfig({ ...env, STORAGE_DRIVER: 's3' })).join(), /the same SECRETS_KEY on every machine/);
  // The image sets NODE_ENV=production: there a key must be given.
  assert.throws(() => loadConfig({ ...base(), NODE_ENV: 'production' }), (error: Error) => error instanceof ConfigError && /set SECRETS_KEY/.test(error.message));
});

test('the secrets key: SECRETS_KEY or SECRETS_KEY_FILE, SECRETS_OLD_KEYS; a bad value is named, never shown', () => {
  const [a, b, c] = [Buffer.alloc(32, 1), Buffer.alloc(32, 2), Buffer.alloc(32, 3)];
  const given = loadConfig({ ...base(), NODE_ENV: 'production', SECRETS_KEY: a.toString('base64'), SECRETS_OLD_KEYS: ` ${b.toString('base64')},${c.toString('base64url')},${a.toString('base64')}` });
  assert.deepEqual([given.secretsKey.from, given.secretsKey.current, given.secretsKey.old], ['SECRETS_KEY', a, [b, c]], 'the current key is not an old one too');
  assert.ok(Object.isFrozen(given.secretsKey));
  assert.deepEqual(secretsKeyWarnings(given.secretsKey), []);
  const file = join(mkdtempSync(join(tmpdir(), 'catalog-key-')), 'key');
  writeFileSync(file, `${b.toString('base64')}\n`);
  const fromFile = loadConfig({ ...base(), SECRETS_KEY_FILE: file }).secretsKey;
  assert.deepEqual([fromFile.from, fromFile.current, fromFile.file], ['SECRETS_KEY_FILE', b, file]);
  const short = Buffer.alloc(16, 7).toString('base64');
  for (const [env, named] of [
    [{ SECRETS_KEY: short }, 'SECRETS_KEY'], [{ SECRETS_KEY: 'not base64 at all!' }, 'SECRETS_KEY'], [{ SECRETS_OLD_KEYS: `${a.toString('base64')},${short}` }, 'SECRETS_OLD_KEYS entry 2'],
    [{ SECRETS_KEY: a.toString('base64'), SECRETS_KEY_FILE: file }, 'not both'], [{ SECRETS_KEY_FILE: `${file}-missing` }, 'SECRETS_KEY_FILE'],
  ] as const) {
    assert.throws(() => loadConfig({ ...base(), ...env }), (error: Error) => error instanceof ConfigError && error.message.includes(named) && !error.message.includes(short), named);
  }
  const published = loadConfig({ ...base(), SECRETS_KEY: 'VL8PgsKt1Zkn+vA1xlktrTB4npEesFwETKtd+GJ2dro=' }).secretsKey;
  assert.match(secretsKeyWarnings(published)[0]!, /published development key/);
});
