// Calls an operation's handler: its context, the Idempotency-Key's transaction, another try after a lost connection.
import type { IncomingMessage } from 'node:http';
import { retryOnConnectionLoss } from '../db/connections.ts';
import type { Logger } from '../log/logger.ts';
import type { RoutedOperation } from './api-steps.ts';
import { withIdempotency } from './idempotency.ts';
import type { Auth, HandlerContext, HandlerResult, ServedHandler, Services, UntypedRequest } from './types.ts';

// Requests that are safe to run again when the database connection was lost under them: reads,
// and the upserts, idempotent by nature (the contract tells clients they are safe to retry).
const SAFE_METHODS = new Set(['GET', 'HEAD']);
const IDEMPOTENT_OPERATIONS = new Set(['upsertItem', 'bulkUpsertItems']);

export interface Invocation {
  services: Services;
  handler: ServedHandler;
  operation: RoutedOperation;
  req: IncomingMessage;
  /** The request's path, decoded by nothing: the Idempotency-Key is scoped to it. */
  path: string;
  requestId: string;
  /** Undefined only on a public operation. */
  auth: Auth | undefined;
}

/** Operations whose contract declares the Idempotency-Key header honour it; others ignore it. */
export function acceptsIdempotencyKey(operation: RoutedOperation): boolean {
  return (operation.parameters ?? []).some((p) => 'in' in p && p.in === 'header' && p.name.toLowerCase() === 'idempotency-key');
}

/** Whether a try that lost its database connection may run again. A keyed request may: its stored answer commits with its effects. */
export function mayRetry(method: string, operationId: string, keyed: boolean): boolean {
  return SAFE_METHODS.has(method) || IDEMPOTENT_OPERATIONS.has(operationId) || keyed;
}

export async function invokeHandler(invocation: Invocation, input: UntypedRequest): Promise<HandlerResult> {
  const { services, handler, operation, req, path, requestId, auth } = invocation;
  const { operationId } = operation;
  // The request's logger and entity manager are made on first use: most requests never log, and
  // a group of single upserts runs on one entity manager, not one per request. Each costs a few
  // percent of a single upsert's CPU (bench/results/, bench:items).
  let logger: Logger | undefined;
  const contextWith = (makeEm: () => HandlerContext['em']): HandlerContext => {
    let em: HandlerContext['em'] | undefined;
    return {
      operationId, requestId, auth: auth!, params: input.params, query: input.query, headers: req.headers, body: input.body, services,
      get em() {
        return (em ??= makeEm());
      },
      get logger() {
        return (logger ??= services.logger.child({ requestId }));
      },
    };
  };
  const idempotencyKey = req.headers['idempotency-key'];
  const keyed = typeof idempotencyKey === 'string' && acceptsIdempotencyKey(operation) && auth !== undefined;
  // Each try on an entity manager of its own: the one of a failed try may hold its state.
  const run = () => keyed
    ? withIdempotency(
      services.orm.em.fork(),
      { catalogId: auth.catalogId, operation: operationId, key: idempotencyKey, path, body: input.body },
      (tx) => handler(contextWith(() => tx)),
    )
    : handler(contextWith(() => services.orm.em.fork()));
  return mayRetry(req.method ?? 'GET', operationId, keyed) ? retryOnConnectionLoss(run) : run();
}
