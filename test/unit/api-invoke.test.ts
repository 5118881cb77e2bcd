// Calling a handler alone (platform/http/api-invoke.ts): its context, its entity manager made on demand, which requests run again after a lost connection.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { invokeHandler, mayRetry } from '../../platform/http/api-invoke.ts';
import type { RoutedOperation } from '../../platform/http/api-steps.ts';
import type { HandlerContext, HandlerResult, Services } from '../../platform/http/types.ts';

const lostConnection = () => Object.assign(new Error('Connection terminated unexpectedly'), { code: '57P01' });
const operation = (operationId: string, idempotencyHeader = false) =>
  ({ operationId, parameters: idempotencyHeader ? [{ in: 'header', name: 'Idempotency-Key' }] : [] }) as unknown as RoutedOperation;

function fixture() {
  const forks: object[] = [];
  const services = {
    orm: { em: { fork: () => { const em = { n: forks.length }; forks.push(em); return em; } } },
    logger: { child: () => ({}) },
  } as unknown as Services;
  return { services, forks };
}
const req = (method: string, headers: Record<string, string> = {}) => ({ method, headers }) as unknown as IncomingMessage;
const input = { params: { id: 'w1' }, query: { limit: 5 }, body: { name: 'x' } };

test('the handler gets the validated request, and an entity manager only when it reads one', async () => {
  const { services, forks } = fixture();
  const seen: HandlerContext[] = [];
  const handler = async (context: HandlerContext): Promise<HandlerResult> => {
    seen.push(context);
    return { status: 200, data: { id: context.params.id } };
  };
  const auth = { keyId: 'k', catalogId: 'c', scopes: [], tier: 'free' };
  const answer = await invokeHandler({ services, handler, operation: operation('getWebhook'), req: req('GET'), path: '/p', requestId: 'r1', auth }, input);
  assert.deepEqual(answer, { status: 200, data: { id: 'w1' } });
  const [context] = seen;
  assert.deepEqual([context!.operationId, context!.requestId, context!.auth, context!.query, context!.body], ['getWebhook', 'r1', auth, { limit: 5 }, { name: 'x' }]);
  assert.equal(forks.length, 0, 'no entity manager until the handler reads one');
  assert.equal(context!.em, context!.em);
  assert.equal(forks.length, 1);
});

test('a read runs again on a new entity manager after a lost connection; a plain POST does not', async () => {
  const { services, forks } = fixture();
  let tries = 0;
  const flaky = async (context: HandlerContext): Promise<HandlerResult> => {
    void context.em;
    if ((tries += 1) === 1) throw lostConnection();
    return { status: 200, data: {} };
  };
  const invocation = { services, handler: flaky, path: '/p', requestId: 'r', auth: undefined };
  await invokeHandler({ ...invocation, operation: operation('listWebhooks'), req: req('GET') }, input);
  assert.deepEqual([tries, forks.length], [2, 2]);
  tries = 0;
  await assert.rejects(invokeHandler({ ...invocation, operation: operation('createWebhook', true), req: req('POST') }, input), /Connection terminated/);
  assert.equal(tries, 1);
});

test('which requests may run again: reads, the upserts, and keyed requests', () => {
  assert.equal(mayRetry('GET', 'listItems', false), true);
  assert.equal(mayRetry('HEAD', 'getItem', false), true);
  assert.equal(mayRetry('POST', 'upsertItem', false), true);
  assert.equal(mayRetry('POST', 'bulkUpsertItems', false), true);
  assert.equal(mayRetry('POST', 'createWebhook', true), true);
  assert.equal(mayRetry('POST', 'createWebhook', false), false);
  assert.equal(mayRetry('DELETE', 'deleteItem', false), false);
});
