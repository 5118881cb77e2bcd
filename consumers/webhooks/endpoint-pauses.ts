// The endpoints a receiver's 429 paused, as one process knows them: marked the moment the status arrives, before the settlement records the pause for the fleet.
import { FIRST_PAUSE_MS, MAX_PAUSE_MS } from '../../domain/webhooks/pacing.ts';

export interface EndpointPauses {
  /** How long the webhook's endpoint stays paused from now, in ms (0: not paused). */
  remainingMs(webhookId: string): number;
  /** Pauses it until `until` (epoch ms), unless it already is for longer. */
  pauseUntil(webhookId: string, until: number): void;
  /** For a send: a 429 pauses the endpoint at once, for its Retry-After, or 1 s until the settlement says how long. */
  onStatus(webhookId: string): (statusCode: number, retryAfterMs: number | null) => void;
  /** The webhooks paused now. */
  paused(): string[];
}

export function endpointPauses(): EndpointPauses {
  const until = new Map<string, number>();
  const remainingMs = (webhookId: string): number => {
    const end = until.get(webhookId);
    if (end === undefined) return 0;
    if (end > Date.now()) return end - Date.now();
    until.delete(webhookId);
    return 0;
  };
  const pauseUntil = (webhookId: string, end: number) => {
    if (end > (until.get(webhookId) ?? 0)) until.set(webhookId, end);
  };
  return {
    remainingMs,
    pauseUntil,
    onStatus: (webhookId) => (statusCode, retryAfterMs) => {
      if (statusCode === 429) pauseUntil(webhookId, Date.now() + Math.min(retryAfterMs ?? FIRST_PAUSE_MS, MAX_PAUSE_MS));
    },
    paused: () => [...until.keys()].filter((id) => remainingMs(id) > 0),
  };
}
