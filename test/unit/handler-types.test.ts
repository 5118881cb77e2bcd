// The compiler holds handlers to the contract: each `@ts-expect-error` below is a mistake `npm run typecheck` must refuse.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Handler, Handlers } from '../../handlers/handler.ts';
import { bindHandlers, handlers } from '../../handlers/index.ts';
import { loadContract } from '../../platform/http/contract.ts';

// @ts-expect-error a status the operation does not answer with
export const undeclaredStatus: Handler<'deleteWebhook'> = async ({ params }) => ({ status: 201, data: { deleted: true, id: params.id } });
// @ts-expect-error an answer missing a required field
export const missingField: Handler<'deleteWebhook'> = async () => ({ status: 200, data: { deleted: true } });
// @ts-expect-error an answer whose field has the wrong type
export const wrongType: Handler<'deleteWebhook'> = async ({ params }) => ({ status: 200, data: { deleted: 'yes', id: params.id } });
// @ts-expect-error a JSON body for an operation whose answer is not in the envelope (sent raw)
export const envelopeForRaw: Handler<'getOpenApi'> = async () => ({ status: 200, data: {} });

export const undeclaredParameter: Handler<'deleteWebhook'> = async ({ params }) => ({
  status: 200,
  // @ts-expect-error a path parameter the operation does not have
  data: { deleted: true, id: params.webhookId },
});

export const typedQuery: Handler<'listWebhooks'> = async ({ query }) => {
  // @ts-expect-error `limit` is an integer: validation coerced it
  const limit: string | undefined = query.limit;
  return { status: 200, data: { webhooks: [], nextCursor: limit ?? null } };
};

export const noBody: Handler<'deleteWebhook'> = async ({ body, params }) => {
  // @ts-expect-error the operation takes no request body
  void body.id;
  return { status: 200, data: { deleted: true, id: params.id } };
};

const { deleteWebhook: _removed, ...withoutOne } = handlers;
void _removed;
// @ts-expect-error an operation of the contract without a handler
export const missingHandler: Handlers = withoutOne;
// @ts-expect-error a handler for no operation of the contract
export const extraHandler: Handlers = { ...handlers, deleteEverything: handlers.deleteWebhook };

test('the handler map binds every operation the contract routes to a handler', async () => {
  const bound = bindHandlers(await loadContract());
  assert.equal(bound.size, Object.keys(handlers).length);
});
