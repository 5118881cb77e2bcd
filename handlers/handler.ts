// The handler type bound to this contract: `Handler<'upsertItem'>` is typed by generated/server.ts.
import type { PathOperationId, operations } from '../generated/server.ts';
import type { OperationHandler } from '../platform/http/operation-types.ts';


/** Served by the platform outside the API prefix, not by a handler. */
export const PLATFORM_OPERATIONS = [
  'getHealth', 'getReadiness', 'getMetrics', 'getDocs', 'getConsole', 'uploadImportFile', 'downloadStoredObject', 'headStoredObject',
] as const satisfies readonly PathOperationId[];

export type HandledOperationId = Exclude<PathOperationId, (typeof PLATFORM_OPERATIONS)[number]>;

/** One operation's handler: its params, query and body as the contract declares them, its answer one of its 2xx/3xx responses. */
export type Handler<Id extends HandledOperationId> = OperationHandler<operations[Id]>;

/** Exactly one handler per operation of the contract: a missing or extra key fails tsc. */
export type Handlers = { readonly [Id in HandledOperationId]: Handler<Id> };
