// Bearer-token authentication: the key is looked up and counted by services.countKey (one Postgres round trip at most,
// shared by a key's concurrent requests); requests without a valid key count against their address.
import { KEY_PREFIXES, keyEnvironment } from '../config/config.ts';
import { addressAllowed } from './client-address.ts';
import { countRequests } from './rate-limit.ts';
import type { RateLimitState } from './rate-limit.ts';
import type { Auth, Services } from './types.ts';
import { httpError } from './errors.ts';

export interface AuthOutcome {
  auth: Auth | undefined;
  rateLimit: RateLimitState;
}

/** Why a request that sent a key is turned away: 401 for a key not valid here, 403 for one used from outside its ranges. */
export interface Refusal {
  code: 'unauthorized' | 'forbidden';
  message: string;
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
 * header that is present but unknown, malformed, expired or revoked is refused with 401 even
 * on a public operation, so a client never silently runs with a key it believes is valid; a key
 * fenced to address ranges that do not hold `clientAddress` is refused with 403 likewise.
 */
export async function authenticate(services: Services, header: string | undefined, clientAddress: string): Promise<AuthOutcome & { refusal?: Refusal }> {
  const token = bearerToken(header);
  const environment = token ? keyEnvironment(token) : undefined;
  // A key of the other deployment is never looked up: it cannot be valid here, and saying whose it is saves a search.
  const mismatch = environment !== undefined && environment !== services.config.environment;
  const found = token && !mismatch ? await services.countKey(token) : undefined;
  if (found && 'auth' in found) {
    // The key's request was counted against the key: its holder sent it, from wherever.
    if (found.allowedCidrs === null || addressAllowed(clientAddress, found.allowedCidrs)) return found;
    const refusal: Refusal = { code: 'forbidden', message: `This API key may not be used from ${clientAddress}.` };
    return { auth: undefined, rateLimit: found.rateLimit, refusal };
  }
  const [rateLimit] = await countRequests(services.orm.em, `ip:${clientAddress}`, ANONYMOUS_LIMIT, Date.now() / 1000);
  if (token === undefined) return { auth: undefined, rateLimit: rateLimit! };
  const message = token === ''
    ? 'The Authorization header must be "Bearer <API key>".'
    : mismatch
      ? `This API key belongs to the ${environment} environment (${KEY_PREFIXES[environment!]}…); this is the ${services.config.environment} `
        + `service, which takes ${KEY_PREFIXES[services.config.environment]}… keys.`
      // Only the holder of a key learns when it expired: the token was right.
      : found
        ? `This API key expired at ${found.expiredAt}; ask for a new one.`
        : 'The API key is invalid, expired or has been revoked.';
  return { auth: undefined, rateLimit: rateLimit!, refusal: { code: 'unauthorized', message } };
}

export function requireScope(auth: Auth, scope: string | undefined): void {
  if (scope !== undefined && !auth.scopes.includes(scope)) {
    throw httpError('forbidden', `This API key lacks the "${scope}" scope required by this operation.`);
  }
}

export const unauthorized = (message = 'An API key is required: send "Authorization: Bearer <API key>".') =>
  httpError('unauthorized', message);
