// One delivery attempt's request: signed with the webhook's live secrets and sent, or, when its secret cannot be opened here, not sent at all.
import type { ClaimedDelivery } from '../../domain/webhooks/delivery-store.ts';
import type { AttemptOutcome, Sender } from '../../domain/webhooks/send-delivery.ts';
import { deliveryHeaders, liveSecrets } from '../../domain/webhooks/signing.ts';
import { SecretKeyError } from '../../platform/crypto/secret-box.ts';
import type { Logger } from '../../platform/log/logger.ts';
import { traceparent } from '../../platform/tracing.ts';
import type { Span } from '../../platform/tracing.ts';

/** Sends a claimed delivery; `onStatus` hears its status as soon as it arrives (a 429 pauses the endpoint). */
export type SignedSend = (delivery: ClaimedDelivery, span: Span | undefined) => Promise<AttemptOutcome>;

export function createSignedSend(sender: Sender, log: Logger, onStatus: (webhookId: string) => (statusCode: number, retryAfterMs: number | null) => void): SignedSend {
  // Webhook and key pairs already logged as unreadable: once each, not once per delivery.
  const unreadable = new Set<string>();

  /** Never sent unsigned: an attempt whose secret cannot be opened fails as a send that failed, and is retried as one. */
  function notSent(delivery: ClaimedDelivery, error: SecretKeyError): AttemptOutcome {
    const pair = `${delivery.webhookId} ${error.keyId}`;
    if (!unreadable.has(pair)) {
      unreadable.add(pair);
      log.error({ webhookId: delivery.webhookId, keyId: error.keyId }, `webhook deliveries not sent: ${error.message} (SECRETS_KEY, SECRETS_OLD_KEYS)`);
    }
    return { ok: false, statusCode: null, durationMs: 0, error: `not sent: ${error.message}`, responseExcerpt: null, retryAfterMs: null };
  }

  return async (delivery, span) => {
    if (delivery.signing instanceof SecretKeyError) return notSent(delivery, delivery.signing);
    const body = Buffer.from(delivery.payload, 'utf8');
    const headers = deliveryHeaders({
      eventId: delivery.eventId, eventType: delivery.eventType, body, secrets: liveSecrets(delivery.signing), timestamp: Math.floor(Date.now() / 1000),
    });
    const context = traceparent(span);
    if (context) headers.traceparent = context;
    return sender.send(delivery.url, headers, body, onStatus(delivery.webhookId));
  };
}
