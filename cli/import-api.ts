// The import command's conversation with the API: the client's options, calls that wait out 429s and 5xx, and the envelope's data or its error in words.
import type { RequestOpts } from '@oazapfts/runtime';
import { UsageError } from './usage-error.ts';

export const API_PREFIX = '/api/v1/catalog';

export type Env = Record<string, string | undefined>;
export type Answer = { status: number; headers: Headers; data: unknown };

export const err = (line: string) => process.stderr.write(`${line}\n`);
export const out = (line: string) => process.stdout.write(`${line}\n`);
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class ApiFailure extends Error {}

// A service that refuses connections or has no such host is not coming back in a minute: after
// this many tries the command stops and says where it looked.
const CONNECT_ATTEMPTS = 3;

// Deno's fetch names the cause in its message only ("…tcp connect error: Connection refused (os error 111)").
const CODES_IN_MESSAGES: ReadonlyArray<readonly [RegExp, string]> = [
  [/connection refused/i, 'ECONNREFUSED'], [/dns error|failed to lookup address/i, 'ENOTFOUND'], [/no route to host|host is unreachable/i, 'EHOSTUNREACH'],
];

/** Why a request got no answer, in words: the cause's code (connection refused, host not found…). */
function noAnswer(error: unknown): { said: string; unreachable: boolean } {
  const chain: unknown[] = [];
  for (let e = error; e instanceof Error && chain.length < 5; e = e.cause) chain.push(e);
  const code = chain.map((e) => (e as { code?: string }).code).find((c) => typeof c === 'string')
    ?? CODES_IN_MESSAGES.find(([pattern]) => chain.some((e) => pattern.test((e as Error).message)))?.[1];
  const said = code === 'ECONNREFUSED' ? 'connection refused' : code === 'ENOTFOUND' || code === 'EAI_AGAIN' ? 'host not found' : code ?? (error as Error).message;
  return { said, unreachable: code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' };
}

/**
 * Calls the API until it answers something other than 429 or a 5xx: waits `Retry-After` on a
 * 429, and min(2^attempt, 60) s with jitter where no Retry-After is given (the spec's guidance).
 * No answer at all names the address and the cause; an unreachable one stops after a few tries.
 */
export async function call<A extends Answer>(what: string, request: () => Promise<A>, where: string): Promise<A> {
  for (let attempt = 1; ; attempt += 1) {
    let answer: A | undefined;
    let failure: { said: string; unreachable: boolean } | undefined;
    try {
      answer = await request();
    } catch (error) {
      failure = noAnswer(error);
      if (attempt >= 8 || (failure.unreachable && attempt >= CONNECT_ATTEMPTS)) {
        throw new ApiFailure(`${what}: no answer from ${where} (${failure.said}). Is the service running there? `
          + 'Set CATALOG_API_URL to its address (default http://127.0.0.1:8080).');
      }
    }
    if (answer && answer.status !== 429 && answer.status < 500) return answer;
    if (answer && answer.status >= 500 && attempt >= 8) return answer;
    const retryAfter = Number(answer?.headers.get('retry-after'));
    const seconds = Number.isFinite(retryAfter) && retryAfter > 0
      ? retryAfter
      : Math.min(2 ** attempt, 60) * (0.5 + Math.random() / 2);
    err(`${what}: ${answer ? `HTTP ${answer.status}` : `no answer from ${where} (${failure!.said})`}; waiting ${Math.ceil(seconds)} s before trying again`);
    await sleep(seconds * 1000);
  }
}

/** The data of a success envelope, or an ApiFailure quoting the error envelope. */
export function dataOf<T>(what: string, answer: Answer, status: number): T {
  const body = answer.data as { success?: boolean; data?: T; error?: { code?: string; message?: string; details?: Array<{ path: string; message: string }> } };
  if (answer.status === status && body?.success) return body.data as T;
  const details = body?.error?.details?.map((d) => `; ${d.path}: ${d.message}`).join('') ?? '';
  throw new ApiFailure(`${what}: HTTP ${answer.status} ${body?.error?.code ?? ''} ${body?.error?.message ?? JSON.stringify(body)}${details}`);
}

export function clientOptions(env: Env): RequestOpts {
  const key = env.CATALOG_API_KEY;
  if (!key) throw new UsageError('CATALOG_API_KEY must hold an API key with the bulk_import:manage scope');
  const base = (env.CATALOG_API_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
  return { baseUrl: base.endsWith(API_PREFIX) ? base : `${base}${API_PREFIX}`, headers: { authorization: `Bearer ${key}` } };
}
