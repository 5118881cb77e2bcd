// The one error catalogue (code → HTTP status) and the one renderer to the spec's envelope.
import type { ErrorCode, ErrorDetail } from '../errors.ts';
import { ProductError } from '../errors.ts';
import { isConnectionError } from '../db/connections.ts';

export const STATUS_BY_CODE: Readonly<Record<ErrorCode, number>> = Object.freeze({
  validation_error: 400,
  // The HTTP message itself is malformed (framing, request line, header syntax).
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  too_many_requests: 429,
  request_header_fields_too_large: 431,
  error: 500,
  not_implemented: 501,
  service_unavailable: 503,
});

// How long a client waits after a 503 for an unreachable database: pools and LISTEN connections
// try again within this (platform/db/connections.ts), so the next try usually finds it back.
const DATABASE_RETRY_AFTER_SECONDS = 5;

export interface ErrorBody {
  success: false;
  error: {
    code: ErrorCode;
    message: string;
    details?: ErrorDetail[];
    retryAfter?: number;
    requestId: string;
  };
}

export interface RenderedError {
  status: number;
  body: ErrorBody;
}

/**
 * Renders any thrown value. A lost or refused database connection is a 503 with a time to retry
 * (a fault of the moment, not of the request); anything else that is not a ProductError becomes
 * a 500 that leaks no internals.
 */
export function renderError(error: unknown, requestId: string): RenderedError {
  if (error instanceof ProductError) {
    const body: ErrorBody = { success: false, error: { code: error.code, message: error.message, requestId } };
    if (error.details && error.details.length > 0) body.error.details = error.details;
    if (error instanceof RateLimitedError) body.error.retryAfter = error.retryAfter;
    return { status: STATUS_BY_CODE[error.code], body };
  }
  if (isConnectionError(error)) {
    return {
      status: 503,
      body: {
        success: false,
        error: {
          code: 'service_unavailable',
          message: `The database cannot be reached right now. Retry after ${DATABASE_RETRY_AFTER_SECONDS} seconds; quote request id ${requestId} if it lasts.`,
          retryAfter: DATABASE_RETRY_AFTER_SECONDS,
          requestId,
        },
      },
    };
  }
  return {
    status: 500,
    body: {
      success: false,
      error: {
        code: 'error',
        message: `An unexpected error occurred. Quote request id ${requestId} when reporting it.`,
        requestId,
      },
    },
  };
}

export class RateLimitedError extends ProductError {
  readonly retryAfter: number;
  constructor(retryAfter: number) {
    super('too_many_requests', `Rate limit exceeded. Retry after ${retryAfter} seconds.`);
    this.retryAfter = retryAfter;
  }
}

export const httpError = (code: ErrorCode, message: string, details?: ErrorDetail[]) =>
  new ProductError(code, message, details);
