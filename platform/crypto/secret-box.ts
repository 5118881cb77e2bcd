// Sealing values at rest with AES-256-GCM: `v1.<key id>.<base64url(iv | ciphertext | tag)>`, bound to where the value lives by associated data.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const KEY_BYTES = 32;
// GCM's standard nonce, random per value: good for 2^32 values under one key (NIST SP 800-38D),
// far more than these columns hold; a key rotation starts the count again.
const IV_BYTES = 12;
const TAG_BYTES = 16;
const OPENED_KEPT = 1024;
const KEPT_MAX_LENGTH = 1024;

export interface SecretKey {
  /** The key's fingerprint (keyId): what a sealed value names, so it is opened with the key it was sealed with. */
  readonly id: string;
  readonly key: Buffer;
}

export interface SecretBox {
  /** The id of the key new values are sealed with. */
  readonly currentKeyId: string;
  /** `plaintext` sealed with the current key, bound to `context` (the row and column it is written to). */
  seal(plaintext: string, context: string): string;
  /** The plaintext of a value sealed with any readable key under the same `context`; a SecretKeyError otherwise. */
  open(sealed: string, context: string): string;
  /** The id of the key a sealed value names; undefined for text that is not a sealed value. */
  keyIdOf(sealed: string): string | undefined;
}

/**
 * A value that cannot be opened: its key is not one this box has, it does not authenticate (changed,
 * or moved from another row or column), or it is not a sealed value. The message names the key id
 * and the kind of value (the context before its `:`), never the value or the context's row.
 */
export class SecretKeyError extends Error {
  override name = 'SecretKeyError';
  /** The key the value names; undefined when it is not a sealed value. */
  readonly keyId: string | undefined;
  /** The context before its `:`, such as `webhooks.secret`. */
  readonly kind: string;
  readonly reason: 'unknown key' | 'not authentic' | 'not sealed';

  constructor(keyId: string | undefined, kind: string, reason: SecretKeyError['reason']) {
    super(reason === 'unknown key' ? `a ${kind} value is sealed with key ${keyId}, which is not configured here`
      : reason === 'not authentic' ? `a ${kind} value sealed with key ${keyId} does not authenticate (changed, or copied from another row)`
        : `a ${kind} value is not sealed (expected ${VERSION}.<key id>.<data>)`);
    this.keyId = keyId;
    this.kind = kind;
    this.reason = reason;
  }
}

/**
 * A key with its id: the first 8 hex digits of its SHA-256, a fingerprint rather than a label, so
 * that an operator cannot name a key wrongly.
 */
export function secretKey(key: Buffer): SecretKey {
  if (key.length !== KEY_BYTES) throw new Error(`a secrets key is ${KEY_BYTES} bytes, not ${key.length}`);
  return { id: createHash('sha256').update(key).digest('hex').slice(0, 8), key };
}

/**
 * The associated data of a value stored in a table's column: `<table>.<column>:<row id>`. A value
 * copied to another row or column no longer opens. The id in lower case, as Postgres prints a uuid
 * whatever case it was given in.
 */
export function columnContext(table: string, column: string, rowId: string): string {
  return `${table}.${column}:${rowId.toLowerCase()}`;
}

/** SQL for the key id of a sealed value stored in `column`, for statements that count or re-seal by key: the format stays this file's. */
export const sealedKeyIdSql = (column: string): string => `split_part(${column}, '.', 2)`;

const kindOf = (context: string) => context.split(':', 1)[0]!;

/** A box that seals with `current` and opens with it and every `readable` key (old keys during a rotation). */
export function createSecretBox(keys: { current: SecretKey; readable?: readonly SecretKey[] }): SecretBox {
  const byId = new Map<string, Buffer>();
  for (const { id, key } of [keys.current, ...(keys.readable ?? [])]) {
    // Ids are fingerprints: one given by hand that does not match its key would seal values nothing can open.
    if (secretKey(key).id !== id) throw new Error(`key id ${id} is not the fingerprint of its key`);
    byId.set(id, key);
  }
  const current = keys.current;
  // Opening makes a cipher context each time, tens of µs: a webhook's secret, opened for every
  // delivery, stays opened while among the last OPENED_KEPT small values opened (keyed by its exact
  // text, so a changed copy is opened afresh and fails). Large values (stored answers) are not kept.
  const opened = new Map<string, string>();

  function parts(sealed: string): { keyId: string; data: string } | undefined {
    const [version, keyId, data, extra] = sealed.split('.');
    if (version !== VERSION || keyId === undefined || !/^[0-9a-f]{8}$/.test(keyId) || data === undefined || extra !== undefined) return undefined;
    return { keyId, data };
  }

  function openSealed(sealed: string, context: string): string {
    const kind = kindOf(context);
    const found = parts(sealed);
    if (!found) throw new SecretKeyError(undefined, kind, 'not sealed');
    const key = byId.get(found.keyId);
    if (!key) throw new SecretKeyError(found.keyId, kind, 'unknown key');
    const data = Buffer.from(found.data, 'base64url');
    if (data.length < IV_BYTES + TAG_BYTES) throw new SecretKeyError(found.keyId, kind, 'not authentic');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      return Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretKeyError(found.keyId, kind, 'not authentic');
    }
  }

  return {
    currentKeyId: current.id,
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current.key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const data = Buffer.concat([iv, cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `${VERSION}.${current.id}.${data.toString('base64url')}`;
    },
    open(sealed, context) {
      const memo = `${context}\n${sealed}`;
      const known = opened.get(memo);
      if (known !== undefined) return known;
      const plaintext = openSealed(sealed, context);
      if (sealed.length > KEPT_MAX_LENGTH) return plaintext;
      opened.set(memo, plaintext);
      if (opened.size > OPENED_KEPT) opened.delete(opened.keys().next().value!);
      return plaintext;
    },
    keyIdOf: (sealed) => parts(sealed)?.keyId,
  };
}
