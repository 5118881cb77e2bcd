// Product errors: what domain code raises, whichever door (HTTP or a consumer) called it.

export type ErrorCode =
  | 'validation_error'
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'request_timeout'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'unprocessable'
  | 'too_many_requests'
  | 'request_header_fields_too_large'
  | 'not_implemented'
  | 'service_unavailable'
  | 'error';

export interface ErrorDetail {
  path: string;
  message: string;
}

export class ProductError extends Error {
  override name = 'ProductError';
  readonly code: ErrorCode;
  readonly details: ErrorDetail[] | undefined;

  constructor(code: ErrorCode, message: string, details?: ErrorDetail[]) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

export const validationError = (details: ErrorDetail[], message = 'The request is not valid.') =>
  new ProductError('validation_error', message, details);
export const notFound = (what: string) => new ProductError('not_found', `${what} was not found.`);
export const conflict = (message: string, details?: ErrorDetail[]) => new ProductError('conflict', message, details);
export const unprocessable = (message: string) => new ProductError('unprocessable', message);
