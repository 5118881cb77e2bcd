// The console's only door to the service: the client generated from openapi.yaml, called with the
// session's bearer token, which lives in this tab's sessionStorage and never in a URL.
import { signal } from '@preact/signals';
import * as api from '../generated/client.ts';
import type { ErrorResponse } from '../generated/client.ts';

export { api };

export interface Session {
  token: string;
  /** The session's credential id: what versions and logs name as its `apiKeyId`. */
  id: string;
  catalogId: string;
  catalogName: string;
  scopes: string[];
  expiresAt: string;
}

const STORAGE_KEY = 'catalog-console-session';
// The API prefix of whichever origin serves the console: the contract's own path, this host.
api.defaults.baseUrl = `${location.origin}${new URL(api.servers.localDevelopment).pathname}`;

function stored(): Session | undefined {
  const text = sessionStorage.getItem(STORAGE_KEY);
  if (!text) return undefined;
  const session = JSON.parse(text) as Session;
  return Date.parse(session.expiresAt) > Date.now() ? session : undefined;
}

export const session = signal<Session | undefined>(stored());
/** Why the session ended (expired, revoked, signed out), shown instead of the console. */
export const ended = signal<string | undefined>(undefined);

export function startSession(value: Session): void {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(value));
  session.value = value;
  ended.value = undefined;
}

export function endSession(reason: string): void {
  sessionStorage.removeItem(STORAGE_KEY);
  session.value = undefined;
  ended.value = reason;
}

export const can = (scope: string): boolean => session.value?.scopes.includes(scope) ?? false;

/** An answer in the spec's error envelope, kept whole so screens can show its message and details. */
export class ApiError extends Error {
  readonly status: number;
  readonly body: ErrorResponse | undefined;
  constructor(status: number, body: ErrorResponse | undefined) {
    super(body?.error?.message ?? `The service answered ${status}.`);
    this.status = status;
    this.body = body;
  }
}

type Answer = { status: number; data?: unknown };
type Unwrapped<R> = R extends { data: string } ? string : R extends { status: 200 | 201 | 202; data: { data: infer D } } ? D : never;

// Before a session (redeeming a link) no Authorization at all: an empty one is refused as malformed.
export const requestOptions = (): { headers: Record<string, string> } => ({ headers: session.value ? { Authorization: `Bearer ${session.value.token}` } : {} });

/** The `data` of a success answer; an ApiError otherwise. A 401 ends the session: it expired or was revoked. */
export async function call<R extends Answer>(request: (opts: { headers: Record<string, string> }) => Promise<R>): Promise<Unwrapped<R>> {
  const answer = await request(requestOptions());
  if (answer.status >= 200 && answer.status < 300) {
    const data = answer.data as { data?: unknown } | string;
    return (typeof data === 'string' ? data : data.data) as Unwrapped<R>;
  }
  const body = typeof answer.data === 'object' ? (answer.data as ErrorResponse) : undefined;
  if (answer.status === 401 && session.value) endSession(body?.error.message ?? 'The session ended.');
  throw new ApiError(answer.status, body);
}

/** Lines of JSON (the results file, failed lines) parsed one object a line. */
export const jsonLines = <T>(text: string): T[] => text.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as T);

/** Offers text as a file download, built in the page: no address carries the token. */
export function download(text: string, fileName: string, type = 'application/x-ndjson'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const anchor = document.createElement('a');
  anchor.href = url;
  anchor.download = fileName;
  anchor.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
