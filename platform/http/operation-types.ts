// A handler's request and answer types, derived from one operation of openapi-typescript's `operations`.
import type { Readable } from 'node:stream';
import type { HandlerContext } from './types.ts';

type Defined<T> = Exclude<T, undefined>;
/** An operation without parameters of a kind gets an object with no properties: reading one fails tsc. */
type OrNone<T> = [Defined<T>] extends [never] ? Record<never, never> : Defined<T>;

interface OperationShape {
  parameters: { query?: unknown; header?: unknown; path?: unknown };
  requestBody?: unknown;
  responses: object;
}

/** The parsed JSON body; `undefined` is possible only where the contract does not require one. */
type RequestBody<Op extends OperationShape> = Op extends { requestBody: { content: { 'application/json': infer Body } } }
  ? Body
  : Op extends { requestBody?: { content: { 'application/json': infer Body } } }
    ? [Body] extends [never] ? undefined : Body | undefined
    : undefined;

export interface OperationRequest<Op extends OperationShape> {
  /** Path parameters, as the router decoded them. */
  params: OrNone<Op['parameters']['path']>;
  /** Query parameters, coerced to the contract's types by validation. */
  query: OrNone<Op['parameters']['query']>;
  body: RequestBody<Op>;
}

type Extra = { headers?: Record<string, string> };
/** A JSON answer in the success envelope is returned as its `data`; any other body is sent as it is. */
type AnswerFor<Status, Response> = Response extends { content: { 'application/json': { success: unknown; data: infer Data } } }
  ? { status: Status; data: Data } & Extra
  : ({ status: Status; raw: string | Buffer; contentType: string } & Extra) | ({ status: Status; stream: Readable; contentType: string } & Extra);

/** Handlers answer the contract's 2xx and 3xx responses; errors are thrown and rendered in the error envelope. */
type SuccessStatus<Op extends OperationShape> = {
  [S in keyof Op['responses']]: S extends number ? (`${S}` extends `2${string}` | `3${string}` ? S : never) : never;
}[keyof Op['responses']];

export type OperationAnswer<Op extends OperationShape> = {
  [S in SuccessStatus<Op>]: AnswerFor<S, Op['responses'][S]>;
}[SuccessStatus<Op>];

/** The handler of one operation: its request typed from the contract, its answer checked against it. */
export type OperationHandler<Op extends OperationShape> = (context: HandlerContext<OperationRequest<Op>>) => Promise<OperationAnswer<Op>>;
