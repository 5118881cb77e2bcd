// Writes responses: JSON envelopes, raw bodies and streams, always with the common headers.
import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { RateLimitState } from './rate-limit.ts';
import { renderError } from './errors.ts';
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

export function sendError(res: ServerResponse, error: unknown, requestId: string, headers: Record<string, string> = {}): number {
  const { status, body } = renderError(error, requestId);
  const extra: Record<string, string> = {};
  if (error instanceof Error && 'allow' in error) extra.allow = String(error.allow);
  sendJson(res, status, body, { ...headers, ...extra });
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
