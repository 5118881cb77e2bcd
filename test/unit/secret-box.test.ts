// The secret box: AES-256-GCM values that open only under their own key and context, and fail with an error that names the key, never the value.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { SecretKeyError, columnContext, createSecretBox, secretKey } from '../../platform/crypto/secret-box.ts';
import { PUBLISHED_DEVELOPMENT_KEY_ID } from '../../platform/config/secrets-key.ts';

const keyA = secretKey(randomBytes(32));
const keyB = secretKey(randomBytes(32));
const SECRET = 'whsec_c2VjcmV0LXZhbHVlLW5vdC10by1iZS1zZWVu';
const HERE = columnContext('webhooks', 'secret', '0190d3c8-8a7e-7c1a-9f00-000000000001');

/** The sealed value's bytes changed at `at` (from its end when negative). */
function flipped(sealed: string, at: number): string {
  const [version, id, data] = sealed.split('.') as [string, string, string];
  const bytes = Buffer.from(data, 'base64url');
  const index = at < 0 ? bytes.length + at : at;
  bytes[index] = bytes[index]! ^ 0x01;
  return `${version}.${id}.${bytes.toString('base64url')}`;
}

const failsWith = (reason: SecretKeyError['reason'], keyId: string | undefined) => (error: unknown) => {
  assert.ok(error instanceof SecretKeyError, String(error));
  assert.equal(error.reason, reason);
  assert.equal(error.keyId, keyId);
  assert.equal(error.kind, 'webhooks.secret');
  assert.ok(!error.message.includes(SECRET) && !error.message.includes('0190d3c8'), error.message);
  return true;
};

test('a value opens as it was sealed, in the v1.<key id>.<base64url> form, different each time', () => {
  const box = createSecretBox({ current: keyA });
  const sealed = box.seal(SECRET, HERE);
  assert.match(sealed, new RegExp(`^v1\\.${keyA.id}\\.[A-Za-z0-9_-]+$`));
  // 12-byte IV, the ciphertext (as long as the text), 16-byte tag.
  assert.equal(Buffer.from(sealed.split('.')[2]!, 'base64url').length, 12 + Buffer.byteLength(SECRET) + 16);
  assert.ok(!sealed.includes(SECRET));
  assert.equal(box.open(sealed, HERE), SECRET);
  assert.notEqual(box.seal(SECRET, HERE), sealed, 'a fresh IV for every value');
  assert.equal(box.keyIdOf(sealed), keyA.id);
  assert.equal(box.keyIdOf(SECRET), undefined);
  assert.equal(box.open(box.seal('', HERE), HERE), '');
  assert.equal(box.open(box.seal('{"authorization":"Bearer é ✓"}', HERE), HERE), '{"authorization":"Bearer é ✓"}');
});

test('a changed IV, ciphertext or tag does not open', () => {
  const box = createSecretBox({ current: keyA });
  const sealed = box.seal(SECRET, HERE);
  for (const at of [0, 11, 12, 12 + 5, -16, -1]) assert.throws(() => box.open(flipped(sealed, at), HERE), failsWith('not authentic', keyA.id), `byte ${at}`);
  assert.throws(() => box.open(sealed.slice(0, -4), HERE), failsWith('not authentic', keyA.id), 'cut short');
  assert.throws(() => box.open(`v1.${keyA.id}.AAAA`, HERE), failsWith('not authentic', keyA.id), 'shorter than an IV and a tag');
});

test('a value moved to another row or column does not open', () => {
  const box = createSecretBox({ current: keyA });
  const sealed = box.seal(SECRET, HERE);
  assert.throws(() => box.open(sealed, columnContext('webhooks', 'secret', '0190d3c8-8a7e-7c1a-9f00-000000000002')), failsWith('not authentic', keyA.id));
  assert.throws(() => box.open(sealed, columnContext('webhooks', 'previous_secret', '0190d3c8-8a7e-7c1a-9f00-000000000001')), (error: unknown) =>
    error instanceof SecretKeyError && error.kind === 'webhooks.previous_secret' && error.reason === 'not authentic');
  // A uuid is the same row whatever case it is written in.
  assert.equal(box.open(sealed, columnContext('webhooks', 'secret', '0190D3C8-8A7E-7C1A-9F00-000000000001')), SECRET);
});

test('an unknown key id fails naming the key; text that is not sealed fails as such', () => {
  const sealed = createSecretBox({ current: keyB }).seal(SECRET, HERE);
  const box = createSecretBox({ current: keyA });
  assert.throws(() => box.open(sealed, HERE), failsWith('unknown key', keyB.id));
  assert.throws(() => box.open(sealed, HERE), new RegExp(`webhooks\\.secret value is sealed with key ${keyB.id}, which is not configured here`));
  assert.throws(() => box.open(SECRET, HERE), failsWith('not sealed', undefined));
  assert.throws(() => box.open(`v2.${keyA.id}.${sealed.split('.')[2]}`, HERE), failsWith('not sealed', undefined));
});

test('old keys still open what they sealed; new values are sealed with the current key', () => {
  const before = createSecretBox({ current: keyA }).seal(SECRET, HERE);
  const rotated = createSecretBox({ current: keyB, readable: [keyA] });
  assert.equal(rotated.currentKeyId, keyB.id);
  assert.equal(rotated.open(before, HERE), SECRET);
  const after = rotated.seal(SECRET, HERE);
  assert.equal(rotated.keyIdOf(after), keyB.id);
  assert.throws(() => createSecretBox({ current: keyA }).open(after, HERE), failsWith('unknown key', keyB.id));
});

test('key ids are fingerprints: 8 hex digits of the key\'s SHA-256, a mislabelled key refused; keys are 32 bytes', () => {
  assert.match(keyA.id, /^[0-9a-f]{8}$/);
  assert.equal(secretKey(Buffer.from(keyA.key)).id, keyA.id);
  assert.notEqual(keyA.id, keyB.id);
  assert.throws(() => createSecretBox({ current: { id: keyB.id, key: keyA.key } }), /not the fingerprint/);
  assert.throws(() => secretKey(randomBytes(16)), /32 bytes/);
});

test("compose.yaml's development key is the one the service warns of", () => {
  const compose = parse(readFileSync(new URL('../../compose.yaml', import.meta.url), 'utf8')) as { 'x-catalog-env': Record<string, string> };
  const fallback = /^\$\{SECRETS_KEY:-(.+)\}$/.exec(compose['x-catalog-env'].SECRETS_KEY!)?.[1];
  assert.ok(fallback, 'compose.yaml gives SECRETS_KEY a development default');
  assert.equal(secretKey(Buffer.from(fallback, 'base64')).id, PUBLISHED_DEVELOPMENT_KEY_ID);
});

test('a value opened before opens again from memory, and a changed copy of it still fails', () => {
  const box = createSecretBox({ current: secretKey(randomBytes(32)) });
  const context = columnContext('webhooks', 'secret', '0192f600-3c4d-7e5f-9a6b-7c8d9e0f1a2b');
  const sealed = box.seal('whsec_same', context);
  assert.equal(box.open(sealed, context), 'whsec_same');
  assert.equal(box.open(sealed, context), 'whsec_same');
  const changed = `${sealed.slice(0, -2)}${sealed.endsWith('A') ? 'B' : 'A'}${sealed.at(-1)}`;
  assert.throws(() => box.open(changed, context), SecretKeyError);
  assert.throws(() => box.open(sealed, columnContext('webhooks', 'secret', '0192f600-3c4d-7e5f-9a6b-7c8d9e0f1a2c')), SecretKeyError);
});
