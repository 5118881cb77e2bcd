// Calls an operation's handler: its context, the database it reads, the Idempotency-Key's transaction, another try after a lost connection.
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { Actor } from '../actor.ts';
import { isConnectionError, retryOnConnectionLoss } from '../db/connections.ts';
import type { Orm } from '../db/orm.ts';
import { hasSqlState } from '../db/pg-errors.ts';
import type { ReadReplica } from '../db/read-replica.ts';
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
  /** The caller's address (client-address.ts), recorded with what the request changes. */
  clientAddress: string;
}

/** Operations whose contract declares the Idempotency-Key header honour it; others ignore it. */
export function acceptsIdempotencyKey(operation: RoutedOperation): boolean {
  return (operation.parameters ?? []).some((p) => 'in' in p && p.in === 'header' && p.name.toLowerCase() === 'idempotency-key');
}

/** Whether the contract lets a replica answer the operation (`x-read-replica`): a read that tolerates a little lag. */
export function readsFromReplica(operation: RoutedOperation): boolean {
  return (operation as { 'x-read-replica'?: unknown })['x-read-replica'] === true;
}

/** Whether a try that lost its database connection may run again. A keyed request may: its stored answer commits with its effects. */
export function mayRetry(method: string, operationId: string, keyed: boolean): boolean {
  return SAFE_METHODS.has(method) || IDEMPOTENT_OPERATIONS.has(operationId) || keyed;
}

export async function invokeHandler(invocation: Invocation, input: UntypedRequest): Promise<HandlerResult> {
  const { services, handler, operation, req, path, requestId, auth } = invocation;
  const { operationId } = operation;
  // A public operation's actor is nobody yet: redeeming a console link makes it the new session.
  const actor: Actor = { kind: auth?.kind ?? 'console', keyId: auth?.keyId ?? null, operator: null, requestId, clientAddress: invocation.clientAddress };
  // The request's logger and entity manager are made on first use: most requests never log, and
  // a group of single upserts runs on one entity manager, not one per request. Each costs a few
  // percent of a single upsert's CPU (bench/results/, bench:items).
  let logger: Logger | undefined;
  const contextWith = (makeEm: () => HandlerContext['em']): HandlerContext => {
    let em: HandlerContext['em'] | undefined;
    return {
      operationId, requestId, auth: auth!, actor, params: input.params, query: input.query, headers: req.headers, body: input.body, services,
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
  const runOn = (orm: Orm) => keyed
    ? withIdempotency(
      orm.em.fork(),
      services.secrets,
      { catalogId: auth.catalogId, operation: operationId, key: idempotencyKey, path, body: input.body },
      (tx) => handler(contextWith(() => tx)),
    )
    : handler(contextWith(() => orm.em.fork()));
  const replica = services.readReplica;
  if (replica && readsFromReplica(operation)) return replicaFirst(services, replica, runOn);
  const run = () => runOn(services.orm);
  return mayRetry(req.method ?? 'GET', operationId, keyed) ? retryOnConnectionLoss(run) : run();
}

/**
 * A marked read: on the replica when its last background check found it well (no round trip
 * here), otherwise on the primary. A replica try that lost its connection, or that the standby's
 * replay cancelled, runs again on the primary with the primary's own retries: the replica never
 * turns a read into an error. Marked operations only read, so running one again is always safe.
 */
async function replicaFirst(services: Services, replica: ReadReplica, runOn: (orm: Orm) => Promise<HandlerResult>): Promise<HandlerResult> {
  const onPrimary = () => {
    services.metrics.reads.inc({ target: 'primary' });
    return runOn(services.orm);
  };
  if (!replica.usable()) return retryOnConnectionLoss(onPrimary);
  services.metrics.reads.inc({ target: 'replica' });
  try {
    return await primed(await runOn(replica.orm));
  } catch (error) {
    if (isConnectionError(error)) replica.lost(error);
    else if (!hasSqlState(error, 'serialization_failure')) throw error;
    return retryOnConnectionLoss(onPrimary);
  }
}

/**
 * A streamed answer with its first chunk already read: the headers go out only after that, so a
 * replica that fails at once (refused, or gone before a check noticed) fails the try, which then
 * runs on the primary, instead of cutting a 200 short. A failure later still ends the stream early.
 */
async function primed(result: HandlerResult): Promise<HandlerResult> {
  if (!('stream' in result)) return result;
  const chunks = result.stream[Symbol.asyncIterator]() as AsyncIterator<unknown>;
  const first = await chunks.next();
  async function* all() {
    try {
      for (let next = first; !next.done; next = await chunks.next()) yield next.value;
    } finally {
      // A client that went away stops the reading here: the source's cursor and connection go back.
      await chunks.return?.();
    }
  }
  return { ...result, stream: Readable.from(all()) };
}
