// Serves one request under the API prefix: key and rate limit, route, body, validation, handler.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ProductError } from '../errors.ts';
import { retryOnConnectionLoss } from '../db/connections.ts';
import { authenticate, requireScope, unauthorized } from './auth.ts';
import { DEFAULT_BODY_LIMIT, parseJsonBody, readBody } from './body.ts';
import type { ContractOperation } from './contract.ts';
import { RateLimitedError, httpError } from './errors.ts';
import { withIdempotency } from './idempotency.ts';
import { pathParameters, schemaErrors, uniqueDetails, unstorableRequestTexts, validationDetails } from './request-validation.ts';
import { rateLimitHeaders, sendError, sendResult } from './respond.ts';
import type { Logger } from '../log/logger.ts';
import type { HandlerContext, ServedHandler, Services } from './types.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

// Requests that are safe to run again when the database connection was lost under them: reads,
// and the upserts, idempotent by nature (the contract tells clients they are safe to retry).
const SAFE_METHODS = new Set(['GET', 'HEAD']);
const IDEMPOTENT_OPERATIONS = new Set(['upsertItem', 'bulkUpsertItems']);

// Bulk upserts carry up to 1,000 items of up to ~16 KB of metadata each (the contract's BulkUpsertRequest and ItemPayload).
const BODY_LIMITS: Record<string, number> = { bulkUpsertItems: 32 * 1024 * 1024 };

export interface RequestRecord {
  operationId: string | undefined;
  catalogId: string | undefined;
}

class MethodNotAllowedError extends ProductError {
  readonly allow: string;
  constructor(allow: string[]) {
    super('method_not_allowed', `This path supports ${allow.join(', ')} only.`);
    this.allow = allow.join(', ');
  }
}

/** Operations whose contract declares the Idempotency-Key header honour it; others ignore it. */
function acceptsIdempotencyKey(operation: ContractOperation): boolean {
  return (operation.parameters ?? []).some((p) => 'in' in p && p.in === 'header' && p.name.toLowerCase() === 'idempotency-key');
}

function allowedMethods(services: Services, path: string, headers: Record<string, string>): string[] {
  return METHODS.filter((method) => services.contract.backend.matchOperation({ method, path, headers }))
    .map((m) => m.toUpperCase());
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

export async function serveApi(
  services: Services,
  handlers: ReadonlyMap<string, ServedHandler>,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  requestId: string,
  record: RequestRecord,
): Promise<void> {
  const baseHeaders: Record<string, string> = { 'x-request-id': requestId, 'cache-control': 'no-store' };
  let limitHeaders: Record<string, string> = {};
  try {
    // A lost connection rolled the rate-limit count back with everything else: counting again is right.
    const outcome = await retryOnConnectionLoss(() => authenticate(services, req.headers.authorization, req.socket.remoteAddress ?? 'unknown'));
    limitHeaders = rateLimitHeaders(outcome.rateLimit);
    record.catalogId = outcome.auth?.catalogId;
    if (!outcome.rateLimit.allowed) throw new RateLimitedError(outcome.rateLimit.retryAfter);
    if (outcome.refusal) throw unauthorized(outcome.refusal);

    const headers = req.headers as Record<string, string>;
    const request = { method: req.method ?? 'GET', path: url.pathname, headers, query: queryObject(url) };
    const operation = services.contract.backend.matchOperation(request) as ContractOperation | undefined;
    if (!operation) {
      const allow = allowedMethods(services, url.pathname, headers);
      if (allow.length > 0) throw new MethodNotAllowedError(allow);
      throw httpError('not_found', `No route ${req.method} ${url.pathname}.`);
    }
    const operationId = operation.operationId!;
    record.operationId = operationId;
    const isPublic = Array.isArray(operation.security) && operation.security.length === 0;
    if (!isPublic) {
      if (!outcome.auth) throw unauthorized();
      requireScope(outcome.auth, (operation as { 'x-scope'?: string })['x-scope']);
    }

    const pathParams = pathParameters(operation, url.pathname);
    let body: unknown;
    let bodyBytes = 0;
    if (operation.requestBody) {
      const raw = await readBody(req, BODY_LIMITS[operationId] ?? DEFAULT_BODY_LIMIT);
      bodyBytes = raw.length;
      if (raw.length > 0 || (operation.requestBody as { required?: boolean }).required) {
        body = parseJsonBody(raw, req.headers['content-type']);
      }
    } else {
      req.resume();
    }
    const parsedRequest = { ...request, body };
    const validation = schemaErrors(services, parsedRequest, operation, bodyBytes);
    const unstorable = unstorableRequestTexts(operation, pathParams, request.query, body);
    if (!validation.valid || unstorable.length > 0) {
      const details = uniqueDetails([...unstorable, ...validationDetails(validation.errors ?? [])]);
      throw httpError('validation_error', 'The request is not valid.', details);
    }
    // Validation parsed and coerced the parameters already, unless the operation has nothing to validate.
    const coerced = (validation.coerced ?? {}) as { query?: Record<string, unknown>; params?: Record<string, string> };
    const parsed = coerced.params && coerced.query ? undefined : services.contract.backend.router.parseRequest(parsedRequest, operation);
    const handler = handlers.get(operationId)!;
    const params = coerced.params ?? (parsed!.params as Record<string, string>);
    const query = coerced.query ?? (parsed!.query as Record<string, unknown>);
    // The request's logger and entity manager are made on first use: most requests never log, and
    // a group of single upserts runs on one entity manager, not one per request. Each costs a few
    // percent of a single upsert's CPU (bench/results/, bench:items).
    let logger: Logger | undefined;
    const contextWith = (makeEm: () => HandlerContext['em']): HandlerContext => {
      let em: HandlerContext['em'] | undefined;
      return {
        operationId, requestId, auth: outcome.auth!, params, query, headers: req.headers, body, services,
        get em() {
          return (em ??= makeEm());
        },
        get logger() {
          return (logger ??= services.logger.child({ requestId }));
        },
      };
    };
    const idempotencyKey = req.headers['idempotency-key'];
    const keyed = typeof idempotencyKey === 'string' && acceptsIdempotencyKey(operation) && outcome.auth;
    // Each try on an entity manager of its own: the one of a failed try may hold its state.
    const run = () => keyed
      ? withIdempotency(
        services.orm.em.fork(),
        { catalogId: outcome.auth!.catalogId, operation: operationId, key: idempotencyKey, path: url.pathname, body },
        (tx) => handler(contextWith(() => tx)),
      )
      : handler(contextWith(() => services.orm.em.fork()));
    // A keyed request is safe too: its stored answer is committed with its effects.
    const result = SAFE_METHODS.has(request.method) || IDEMPOTENT_OPERATIONS.has(operationId) || keyed
      ? await retryOnConnectionLoss(run)
      : await run();
    await sendResult(res, result, { ...baseHeaders, ...limitHeaders });
  } catch (error) {
    if (!(error instanceof ProductError)) services.logger.error({ err: error, requestId }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendError(res, error, requestId, { ...baseHeaders, ...limitHeaders });
  }
}
