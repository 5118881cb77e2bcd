// Validation of a request before its handler: the contract's schemas with bounded work, the
// one text rule for what Postgres can store, and percent-decoding of path parameters.
import type { ErrorObject } from 'ajv';
import type { Request, ValidationResult } from 'openapi-backend';
import type { ErrorDetail } from '../errors.ts';
import { unstorableTexts } from '../db/storable-text.ts';
import { API_PREFIX } from './contract.ts';
import type { ContractOperation } from './contract.ts';
import { httpError } from './errors.ts';
import type { Services } from './types.ts';

// A 400 lists at most this many details: enough to fix a request, bounded for any body.
export const MAX_DETAILS = 100;

/** Turns Ajv errors into the envelope's details, with paths like `items.3.sku` or `query.limit`. */
export function validationDetails(errors: ErrorObject[]): ErrorDetail[] {
  const details = errors.slice(0, MAX_DETAILS * 4).map((error) => {
    const segments = error.instancePath.split('/').slice(1).map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
    if (segments[0] === 'requestBody') segments.shift();
    const params = error.params as Record<string, unknown>;
    if (error.keyword === 'required') segments.push(String(params.missingProperty));
    if (error.keyword === 'additionalProperties') {
      segments.push(String(params.additionalProperty));
      return { path: segments.join('.'), message: 'is not a known field' };
    }
    return { path: segments.join('.') || 'body', message: error.message ?? 'is not valid' };
  });
  // allOf/oneOf branches can repeat the same complaint; say each once.
  return uniqueDetails(details);
}

export function uniqueDetails(details: readonly ErrorDetail[]): ErrorDetail[] {
  const seen = new Set<string>();
  return details.filter((d) => !seen.has(`${d.path}\0${d.message}`) && seen.add(`${d.path}\0${d.message}`)).slice(0, MAX_DETAILS);
}

/** A path segment percent-decoded, or undefined when it is not valid percent-encoded UTF-8 (`%FF`, a lone `%`). */
export function decodedSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * The operation's path parameters, percent-decoded, by name; a segment that is not valid
 * percent-encoding (`%FF`, a lone `%`) is a validation error of its parameter, not a 500.
 */
export function pathParameters(operation: ContractOperation, pathname: string): Record<string, string> {
  const template = operation.path.split('/');
  const given = pathname.slice(API_PREFIX.length).split('/');
  const params: Record<string, string> = {};
  const details: ErrorDetail[] = [];
  template.forEach((segment, i) => {
    const name = /^\{(.+)\}$/.exec(segment)?.[1];
    if (name === undefined) return;
    const value = decodedSegment(given[i] ?? '');
    if (value === undefined) details.push({ path: `path.${name}`, message: 'is not valid percent-encoded UTF-8' });
    else params[name] = value;
  });
  if (details.length > 0) throw httpError('validation_error', 'The request is not valid.', details);
  return params;
}

/**
 * Where the operation's body holds item payloads (`x-item-payloads`): `body` for the whole body,
 * or the name of an array of them. Those are validated by the service's item validator, which
 * applies the contract's schema, the text rule and the service's rules in one answer (per
 * element for an array, where one bad element fails alone); the pipeline leaves them to it.
 */
const itemPayloadsOf = (operation: ContractOperation) => (operation as { 'x-item-payloads'?: string })['x-item-payloads'];

/** The body without what the item validator checks itself. */
function bodyLeftToPipeline(operation: ContractOperation, body: unknown): unknown {
  const payloads = itemPayloadsOf(operation);
  if (payloads === undefined) return body;
  if (payloads === 'body') return undefined;
  return typeof body === 'object' && body !== null && !Array.isArray(body)
    ? Object.fromEntries(Object.entries(body).filter(([name]) => name !== payloads))
    : body;
}

/** Every text a client sent that Postgres could not store: path and query parameters and the body. */
export function unstorableRequestTexts(
  operation: ContractOperation, params: Record<string, string>, query: Record<string, string | string[]>, body: unknown,
): ErrorDetail[] {
  return [
    ...unstorableTexts(params, 'path', MAX_DETAILS),
    ...unstorableTexts(query, 'query', MAX_DETAILS),
    ...unstorableTexts(bodyLeftToPipeline(operation, body), '', MAX_DETAILS),
  ];
}

/** The contract's validation of parameters and body, bounded, less what the item validator checks. */
export function schemaErrors(services: Services, request: Request, operation: ContractOperation, bodyBytes: number): ValidationResult {
  if (itemPayloadsOf(operation) !== 'body') return services.contract.validateRequest(request, operation, bodyBytes);
  // Without parameters there is nothing left for the contract's validator but a query the
  // operation does not declare: the single upsert's hot path skips openapi-backend's request
  // parsing, a sixteenth of its CPU (bench/results/, bench:items). New objects each time: they
  // become the handler's params and query.
  if (!operation.parameters?.length && Object.keys(request.query ?? {}).length === 0) return { valid: true, errors: null, coerced: { params: {}, query: {} } };
  // The parameters alone: without a body (nor a JSON content type) openapi-backend leaves the
  // body's schema out, and only says that a body is required, which is dropped here.
  const { 'content-type': _contentType, ...headers } = request.headers as Record<string, string>;
  return services.contract.validateRequest({ ...request, headers, body: undefined }, operation, 0, (error) =>
    error.keyword === 'required' && (error.params as { missingProperty?: string }).missingProperty === 'requestBody');
}
