// Bearer-token authentication: the key is looked up and counted by services.countKey (one Postgres round trip at most,
// shared by a key's concurrent requests); requests without a valid key count against their address.
import { KEY_PREFIXES, keyEnvironment } from '../config/config.ts';
import { countRequests } from './rate-limit.ts';
import type { RateLimitState } from './rate-limit.ts';
import type { Auth, Services } from './types.ts';
import { httpError } from './errors.ts';

export interface AuthOutcome {
  auth: Auth | undefined;
  rateLimit: RateLimitState;
}

// Requests without a valid key are limited per client address at the free tier's rate,
// so unauthenticated traffic (and key guessing) cannot run unbounded.
const ANONYMOUS_LIMIT = 100;

function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : '';
}

/**
 * Resolves the key (if any) and counts the request against its budget. An Authorization
 * header that is present but unknown, malformed or revoked is refused with 401 even on a
 * public operation, so a client never silently runs with a key it believes is valid.
 */
export async function authenticate(services: Services, header: string | undefined, clientAddress: string): Promise<AuthOutcome & { refusal?: string }> {
  const token = bearerToken(header);
  const environment = token ? keyEnvironment(token) : undefined;
  // A key of the other deployment is never looked up: it cannot be valid here, and saying whose it is saves a search.
  const mismatch = environment !== undefined && environment !== services.config.environment;
  if (token && !mismatch) {
    const counted = await services.countKey(token);
    if (counted) return counted;
  }
  const [rateLimit] = await countRequests(services.orm.em, `ip:${clientAddress}`, ANONYMOUS_LIMIT, Date.now() / 1000);
  if (token === undefined) return { auth: undefined, rateLimit: rateLimit! };
  const refusal = token === ''
    ? 'The Authorization header must be "Bearer <API key>".'
    : mismatch
      ? `This API key belongs to the ${environment} environment (${KEY_PREFIXES[environment!]}…); this is the ${services.config.environment} `
        + `service, which takes ${KEY_PREFIXES[services.config.environment]}… keys.`
      : 'The API key is invalid, expired or has been revoked.';
  return { auth: undefined, rateLimit: rateLimit!, refusal };
}

export function requireScope(auth: Auth, scope: string | undefined): void {
  if (scope !== undefined && !auth.scopes.includes(scope)) {
    throw httpError('forbidden', `This API key lacks the "${scope}" scope required by this operation.`);
  }
}

export const unauthorized = (message = 'An API key is required: send "Authorization: Bearer <API key>".') =>
  httpError('unauthorized', message);
