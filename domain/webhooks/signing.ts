// Webhook secrets and the headers of a delivery: the spec's signed headers plus the Standard Webhooks ones.
import { createHmac, createSecretKey, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { columnContext } from '../../platform/crypto/secret-box.ts';

export const USER_AGENT = 'Service-Webhooks/1.0';
/** How long the previous secret keeps signing after a rotation (docs/webhooks.md, "Subscribing"). */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;

/** `whsec_` + base64 of 32 random bytes: a new one for every webhook and every rotation. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** Where a webhook's secrets are sealed at rest: each opens only in its own row and column. */
export const secretContext = (webhookId: string) => columnContext('webhooks', 'secret', webhookId);
export const previousSecretContext = (webhookId: string) => columnContext('webhooks', 'previous_secret', webhookId);

export interface SigningSecrets {
  readonly secret: string;
  readonly previousSecret: string | null;
  readonly previousSecretExpiresAt: Date | null;
}

/** The secrets that sign now: the current one first, then the previous one while it lives. */
export function liveSecrets(webhook: SigningSecrets, now = Date.now()): string[] {
  const live = [webhook.secret];
  if (webhook.previousSecret && webhook.previousSecretExpiresAt && webhook.previousSecretExpiresAt.getTime() > now) {
    live.push(webhook.previousSecret);
  }
  return live;
}

export interface DeliveryHeadersInput {
  readonly eventId: string;
  readonly eventType: string;
  /** The exact bytes that will be sent. */
  readonly body: Buffer;
  readonly secrets: readonly string[];
  /** Unix seconds; a fresh one per attempt, so retries hours later still pass the 300 s check. */
  readonly timestamp: number;
}

// Building a key from a string costs more than the HMAC of a small body: keep the few in use.
const keys = new Map<string, KeyObject>();
function cachedKey(id: string, material: () => Buffer): KeyObject {
  let key = keys.get(id);
  if (!key) {
    if (keys.size >= 1000) keys.clear();
    key = createSecretKey(material());
    keys.set(id, key);
  }
  return key;
}

/** HMAC-SHA256 hex of `<t>.<body>` keyed with the secret string as given (`whsec_…`). */
export function serviceSignature(secret: string, timestamp: number, body: Buffer): string {
  const key = cachedKey(`s:${secret}`, () => Buffer.from(secret, 'utf8'));
  return createHmac('sha256', key).update(`${timestamp}.`).update(body).digest('hex');
}

/**
 * Standard Webhooks: base64 HMAC-SHA256 of `<id>.<t>.<body>` keyed with the base64-decoded
 * part after `whsec_`, so its verification libraries work unchanged.
 */
export function standardSignature(secret: string, eventId: string, timestamp: number, body: Buffer): string {
  const key = cachedKey(`w:${secret}`, () => Buffer.from(secret.replace(/^whsec_/, ''), 'base64'));
  return createHmac('sha256', key).update(`${eventId}.${timestamp}.`).update(body).digest('base64');
}

export function deliveryHeaders(input: DeliveryHeadersInput): Record<string, string> {
  const { eventId, timestamp, body, secrets } = input;
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-signature': `t=${timestamp},${secrets.map((s) => `v1=${serviceSignature(s, timestamp, body)}`).join(',')}`,
    'x-service-event-type': input.eventType,
    'x-service-event-id': eventId,
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => `v1,${standardSignature(s, eventId, timestamp, body)}`).join(' '),
  };
}
