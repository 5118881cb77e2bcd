// The steps of an API request before its handler, each one job: who calls, may they, which operation, what they sent.
import type { IncomingMessage } from 'node:http';
import { ProductError } from '../errors.ts';
import { retryOnConnectionLoss } from '../db/connections.ts';
import { authenticate, requireScope, unauthorized } from './auth.ts';
import { clientAddress } from './client-address.ts';
import type { AuthOutcome, Refusal } from './auth.ts';
import { DEFAULT_BODY_LIMIT, parseJsonBody, readBody } from './body.ts';
import type { ContractOperation } from './contract.ts';
import { RateLimitedError, httpError } from './errors.ts';
import { pathParameters, schemaErrors, uniqueDetails, unstorableRequestTexts, validationDetails } from './request-validation.ts';
import type { Auth, Services, UntypedRequest } from './types.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

// Bulk upserts carry up to 1,000 items of up to ~16 KB of metadata each (the contract's BulkUpsertRequest and ItemPayload).
const BODY_LIMITS: Record<string, number> = { bulkUpsertItems: 32 * 1024 * 1024 };

/** The caller's key and budget, and the address they call from (client-address.ts). */
export type Caller = AuthOutcome & { refusal?: Refusal; address: string };

/** The request as the router and the validator read it. */
export interface ApiRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  query: Record<string, string | string[]>;
}

export type RoutedOperation = ContractOperation & { operationId: string };

export interface RequestBody {
  /** The parsed JSON; undefined when the operation takes none or an optional one was not sent. */
  value: unknown;
  bytes: number;
}

class MethodNotAllowedError extends ProductError {
  readonly allow: string;
  constructor(allow: string[]) {
    super('method_not_allowed', `This path supports ${allow.join(', ')} only.`);
    this.allow = allow.join(', ');
  }
}

/** Looks the key up and counts the request against its budget (or its address's, without a valid key). */
export function identifyCaller(services: Services, req: IncomingMessage): Promise<Caller> {
  // A lost connection rolled the rate-limit count back with everything else: counting again is right.
  const address = clientAddress(req, services.config.trustProxyHops);
  return retryOnConnectionLoss(async () => ({ ...await authenticate(services, req.headers.authorization, address), address }));
}

/** Refuses a caller over their budget (429), then one whose key is not valid here (401) or not from here (403). */
export function admitCaller(caller: Caller): void {
  if (!caller.rateLimit.allowed) throw new RateLimitedError(caller.rateLimit.retryAfter);
  if (caller.refusal) throw httpError(caller.refusal.code, caller.refusal.message);
}

export function describeRequest(req: IncomingMessage, url: URL): ApiRequest {
  return { method: req.method ?? 'GET', path: url.pathname, headers: req.headers as Record<string, string>, query: queryObject(url) };
}

function queryObject(url: URL): Record<string, string | string[]> {
  // A Map, then own properties: a parameter named `__proto__` or `constructor` is data, never the
  // object's prototype (assigning `query.__proto__` would swap it and break every later step).
  const query = new Map<string, string | string[]>();
  for (const [name, value] of url.searchParams) {
    const existing = query.get(name);
    query.set(name, existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value]);
  }
  return Object.fromEntries(query);
}

/** The contract's operation for the method and path; 405 with the methods the path has, or 404. */
export function routeRequest(services: Services, request: ApiRequest): RoutedOperation {
  const operation = services.contract.backend.matchOperation(request) as ContractOperation | undefined;
  if (operation) return operation as RoutedOperation;
  const allow = METHODS.filter((method) => services.contract.backend.matchOperation({ method, path: request.path, headers: request.headers }))
    .map((m) => m.toUpperCase());
  if (allow.length > 0) throw new MethodNotAllowedError(allow);
  throw httpError('not_found', `No route ${request.method} ${request.path}.`);
}

/**
 * A public operation (`security: []`) admits anyone; any other needs a key, with the operation's
 * `x-scope` unless that is `none` (`GET /access`: any valid key, whatever its scopes).
 */
export function authorize(operation: RoutedOperation, auth: Auth | undefined): void {
  if (Array.isArray(operation.security) && operation.security.length === 0) return;
  if (!auth) throw unauthorized();
  const scope = (operation as { 'x-scope'?: string })['x-scope'];
  if (scope !== 'none') requireScope(auth, scope);
}

/** The path parameters, percent-decoded: a malformed one is refused (400) before the body is read. */
export function decodePathParameters(operation: RoutedOperation, request: ApiRequest): Record<string, string> {
  return pathParameters(operation, request.path);
}

/** Reads and parses the body of an operation that takes one, within its size limit; drains nothing else. */
export async function readRequestBody(req: IncomingMessage, operation: RoutedOperation): Promise<RequestBody> {
  if (!operation.requestBody) {
    req.resume();
    return { value: undefined, bytes: 0 };
  }
  const raw = await readBody(req, BODY_LIMITS[operation.operationId] ?? DEFAULT_BODY_LIMIT);
  const sent = raw.length > 0 || (operation.requestBody as { required?: boolean }).required;
  return { value: sent ? parseJsonBody(raw, req.headers['content-type']) : undefined, bytes: raw.length };
}

/** Checks parameters and body against the contract (400 with every problem) and returns them coerced to its types. */
export function validateRequest(
  services: Services, operation: RoutedOperation, request: ApiRequest, pathParams: Record<string, string>, body: RequestBody,
): UntypedRequest {
  const parsedRequest = { ...request, body: body.value };
  const validation = schemaErrors(services, parsedRequest, operation, body.bytes);
  const unstorable = unstorableRequestTexts(operation, pathParams, request.query, body.value);
  if (!validation.valid || unstorable.length > 0) {
    const details = uniqueDetails([...unstorable, ...validationDetails(validation.errors ?? [])]);
    throw httpError('validation_error', 'The request is not valid.', details);
  }
  // Validation parsed and coerced the parameters already, unless the operation has nothing to validate.
  const coerced = (validation.coerced ?? {}) as { query?: Record<string, unknown>; params?: Record<string, string> };
  const parsed = coerced.params && coerced.query ? undefined : services.contract.backend.router.parseRequest(parsedRequest, operation);
  return {
    params: coerced.params ?? (parsed!.params as Record<string, string>),
    query: coerced.query ?? (parsed!.query as Record<string, unknown>),
    body: body.value,
  };
}
