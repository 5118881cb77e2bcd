// Single upserts in a loop, each a new item, every answer recorded (status, Retry-After, the stored item's id) and checked against the contract.
import { setTimeout as delay } from 'node:timers/promises';
import { assertMatchesContract } from './contract-check.ts';

export interface UpsertAnswer {
  readonly externalId: string;
  readonly price: number;
  readonly sentAt: number;
  readonly answeredAt: number;
  /** 0 when no answer came (a reset connection, a timeout). */
  readonly status: number;
  readonly ok: boolean;
  /** The stored item's id, from a 2xx answer. */
  readonly serviceId?: string;
  readonly retryAfter: string | null;
  /** The error code or message of an answer that is not 2xx. */
  readonly error?: string;
}

export interface UpsertLoad {
  answers(): readonly UpsertAnswer[];
  succeeded(): number;
  contractViolations(): readonly string[];
  /** Stops after the requests in flight; resolves once they are answered. */
  stop(): Promise<void>;
}

// A request never answered fails the request, not the test run.
const ANSWER_MS = 30_000;

/** `workers` loops, each sending its next upsert `pauseMs` after the last answer: a steady, moderate load. */
export function startUpsertLoad(apiUrl: string, key: string, { workers = 2, pauseMs = 20, externalSystem = 'pos' } = {}): UpsertLoad {
  const answers: UpsertAnswer[] = [];
  const violations: string[] = [];
  let next = 0;
  let stopped = false;
  const one = async (): Promise<void> => {
    const n = next++;
    const externalId = `U-${n}`;
    const price = n + 0.25;
    const url = `${apiUrl}/items/upsert`;
    const sentAt = Date.now();
    try {
      const response = await fetch(url, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ externalSystem, externalId, name: `Upserted ${n}`, price }), signal: AbortSignal.timeout(ANSWER_MS),
      });
      const body = await response.json() as { data?: { serviceId?: string }; error?: { code?: string } };
      await assertMatchesContract('POST', url, response, body).catch((error: Error) => violations.push(`${externalId}: ${error.message.slice(0, 300)}`));
      const ok = response.status === 200 || response.status === 201;
      answers.push({
        externalId, price, sentAt, answeredAt: Date.now(), status: response.status, ok, retryAfter: response.headers.get('retry-after'),
        ...(ok ? { serviceId: body.data?.serviceId } : { error: body.error?.code ?? JSON.stringify(body).slice(0, 200) }),
      });
    } catch (error) {
      answers.push({ externalId, price, sentAt, answeredAt: Date.now(), status: 0, ok: false, retryAfter: null, error: (error as Error).message });
    }
  };
  const loops = Array.from({ length: workers }, async () => {
    while (!stopped) {
      await one();
      await delay(pauseMs);
    }
  });
  return {
    answers: () => answers,
    succeeded: () => answers.filter((a) => a.ok).length,
    contractViolations: () => violations,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}
