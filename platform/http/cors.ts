// Cross-origin requests from browsers (CORS_ALLOWED_ORIGINS): the headers that let an allowed origin read the answers, and its preflight's answer.
import type { IncomingMessage, ServerResponse } from 'node:http';

// What a browser script may send beyond the simple headers, and read beyond the simple ones.
const ALLOWED_HEADERS = 'Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id';
const EXPOSED_HEADERS = 'X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, ETag, Location';
const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';
// How long a browser may reuse a preflight's answer.
const MAX_AGE_SECONDS = 600;

export interface Cors {
  /** Whether browsers on `origin` may call the service. */
  allows(origin: string | undefined): origin is string;
  /** Sets the headers that let an allowed origin read this answer (before it is written). */
  expose(req: IncomingMessage, res: ServerResponse): void;
  /** A preflight (OPTIONS with Access-Control-Request-Method) while CORS is on. */
  isPreflight(req: IncomingMessage): boolean;
  /** Answers a preflight from an allowed origin: 204 with what it may do. */
  answerPreflight(res: ServerResponse, origin: string, headers: Record<string, string>): void;
}

/** `allowed`: origins as `scheme://host[:port]`, or `*` for any; empty turns CORS off. */
export function createCors(allowed: readonly string[]): Cors {
  const any = allowed.includes('*');
  const origins = new Set(allowed);
  const allows = (origin: string | undefined): origin is string => origin !== undefined && (any || origins.has(origin));
  return {
    allows,
    expose(req, res) {
      const origin = req.headers.origin;
      // Vary: Origin even when refused, so a cache never hands one origin's answer to another.
      if (allowed.length > 0) res.setHeader('vary', 'Origin');
      if (!allows(origin)) return;
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
    },
    isPreflight: (req) => allowed.length > 0 && req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined,
    answerPreflight(res, origin, headers) {
      res.writeHead(204, {
        ...headers, 'access-control-allow-origin': origin, vary: 'Origin', 'access-control-allow-methods': ALLOWED_METHODS,
        'access-control-allow-headers': ALLOWED_HEADERS, 'access-control-max-age': String(MAX_AGE_SECONDS),
      }).end();
    },
  };
}
