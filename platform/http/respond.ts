// Writes responses: JSON envelopes, raw bodies and streams, always with the common headers.
import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { RateLimitState } from './rate-limit.ts';
import { hasUnreadBody, settleUnreadBody } from './body.ts';
import { renderError } from './errors.ts';
import { lingerAfterAnswer } from './transport.ts';
import type { HandlerResult } from './types.ts';

export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(state.limit),
    'x-ratelimit-remaining': String(state.remaining),
    'x-ratelimit-reset': String(state.resetAt),
  };
  if (!state.allowed) headers['retry-after'] = String(state.retryAfter);
  return headers;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(payload)),
  });
  res.end(payload);
}

/**
 * Answers with the error envelope. A request body left unread (the request is refused before or
 * while reading it) is settled first, so the answer reaches a client that is still sending and
 * the connection can carry its next request (settleUnreadBody); when the rest is too large or
 * too slow to read, the answer closes the connection, lingering (lingerAfterAnswer).
 */
export function sendError(res: ServerResponse, error: unknown, requestId: string, headers: Record<string, string> = {}): number {
  const { status, body } = renderError(error, requestId);
  const extra: Record<string, string> = {};
  if (body.error.retryAfter !== undefined) extra['retry-after'] = String(body.error.retryAfter);
  if (error instanceof Error && 'allow' in error) extra.allow = String(error.allow);
  const { req } = res;
  if (!hasUnreadBody(req)) {
    sendJson(res, status, body, { ...headers, ...extra });
    return status;
  }
  void settleUnreadBody(req).then((verdict) => {
    if (res.headersSent || res.destroyed) return;
    if (verdict === 'close') {
      extra.connection = 'close';
      lingerAfterAnswer(req);
    }
    sendJson(res, status, body, { ...headers, ...extra });
  });
  return status;
}

export async function sendResult(res: ServerResponse, result: HandlerResult, headers: Record<string, string>): Promise<void> {
  const all = { ...headers, ...result.headers };
  if ('data' in result) {
    sendJson(res, result.status, { success: true, data: result.data }, all);
  } else if ('raw' in result) {
    res.writeHead(result.status, {
      ...all,
      'content-type': result.contentType,
      'content-length': String(Buffer.byteLength(result.raw)),
    });
    res.end(result.raw);
  } else {
    res.writeHead(result.status, { ...all, 'content-type': result.contentType });
    await pipeline(result.stream, res);
  }
}
