// Calling a handler alone (platform/http/api-invoke.ts): its context, its entity manager made on demand, which requests run again after a lost connection, which read the replica.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { invokeHandler, mayRetry, readsFromReplica } from '../../platform/http/api-invoke.ts';
import type { RoutedOperation } from '../../platform/http/api-steps.ts';
import { checkReplicaReads, loadContract } from '../../platform/http/contract.ts';
import type { ContractOperation } from '../../platform/http/contract.ts';
import { createMetrics } from '../../platform/metrics.ts';
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
  const auth = { keyId: 'k', kind: 'key' as const, catalogId: 'c', scopes: [], tier: 'free' };
  const answer = await invokeHandler({ services, handler, operation: operation('getWebhook'), req: req('GET'), path: '/p', requestId: 'r1', auth, clientAddress: '192.0.2.1' }, input);
  assert.deepEqual(answer, { status: 200, data: { id: 'w1' } });
  const [context] = seen;
  assert.deepEqual([context!.operationId, context!.requestId, context!.auth, context!.query, context!.body], ['getWebhook', 'r1', auth, { limit: 5 }, { name: 'x' }]);
  assert.deepEqual(context!.actor, { kind: 'key', keyId: 'k', operator: null, requestId: 'r1', clientAddress: '192.0.2.1' });
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
  const invocation = { services, handler: flaky, path: '/p', requestId: 'r', auth: undefined, clientAddress: '192.0.2.1' };
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

// A replica and a primary as the invoke step sees them: entity managers that say where they come from, the reads counter.
function replicated(usable: boolean) {
  const made: string[] = [];
  const lost: unknown[] = [];
  const ormOf = (where: string) => ({ em: { fork: () => { made.push(where); return { where }; } } });
  const metrics = createMetrics();
  const readReplica = { orm: ormOf('replica'), usable: () => usable, lagSeconds: () => 0, lost: (error: unknown) => lost.push(error), close: async () => undefined };
  const services = { orm: ormOf('primary'), metrics, readReplica, logger: { child: () => ({}) } } as unknown as Services;
  const reads = async () => Object.fromEntries((await metrics.reads.get()).values.map((v) => [v.labels.target, v.value]));
  return { services, made, lost, reads };
}
const marked = (operationId: string) => ({ ...operation(operationId), 'x-read-replica': true }) as unknown as RoutedOperation;
const whereRead = async (context: HandlerContext): Promise<HandlerResult> => ({ status: 200, data: { where: (context.em as unknown as { where: string }).where } });

test('a marked read goes to the replica while it is well, else to the primary; an unmarked one always to the primary', async () => {
  const well = replicated(true);
  const call = (services: Services, op: RoutedOperation) => invokeHandler({ services, handler: whereRead, operation: op, req: req('GET'), path: '/p', requestId: 'r', auth: undefined, clientAddress: '192.0.2.1' }, input);
  assert.deepEqual(await call(well.services, marked('listItems')), { status: 200, data: { where: 'replica' } });
  assert.deepEqual(await call(well.services, operation('getItem')), { status: 200, data: { where: 'primary' } });
  assert.deepEqual(await well.reads(), { replica: 1 }, 'an unmarked read is not counted');
  const away = replicated(false);
  assert.deepEqual(await call(away.services, marked('listItems')), { status: 200, data: { where: 'primary' } });
  assert.deepEqual(await away.reads(), { primary: 1 });
});

test('a replica try that lost its connection, or that replay cancelled, runs again on the primary', async () => {
  const { services, made, lost, reads } = replicated(true);
  const failOnReplica = (error: Error) => async (context: HandlerContext): Promise<HandlerResult> => {
    if ((context.em as unknown as { where: string }).where === 'replica') throw error;
    return whereRead(context);
  };
  const call = (handler: (context: HandlerContext) => Promise<HandlerResult>) =>
    invokeHandler({ services, handler, operation: marked('listEvents'), req: req('GET'), path: '/p', requestId: 'r', auth: undefined, clientAddress: '192.0.2.1' }, input);
  assert.deepEqual(await call(failOnReplica(lostConnection())), { status: 200, data: { where: 'primary' } });
  assert.equal(lost.length, 1, 'the replica is told, so the next reads skip it until a check finds it well');
  const conflict = Object.assign(new Error('canceling statement due to conflict with recovery'), { code: '40001' });
  assert.deepEqual(await call(failOnReplica(conflict)), { status: 200, data: { where: 'primary' } });
  assert.equal(lost.length, 1, 'a cancelled statement says nothing of the replica\'s health');
  await assert.rejects(call(failOnReplica(new Error('a bug'))), /a bug/);
  assert.deepEqual(made, ['replica', 'primary', 'replica', 'primary', 'replica']);
  assert.deepEqual(await reads(), { replica: 3, primary: 2 });
});

test('a streamed answer from the replica that fails before its first chunk is read from the primary instead', async () => {
  const { services } = replicated(true);
  const handler = async (context: HandlerContext): Promise<HandlerResult> => {
    const where = (context.em as unknown as { where: string }).where;
    async function* lines() {
      if (where === 'replica' && failing) throw lostConnection();
      yield `${where}\n`;
      yield 'b\n';
    }
    return { status: 200, contentType: 'application/x-ndjson', stream: Readable.from(lines()) };
  };
  const body = async () => {
    const answer = await invokeHandler({ services, handler, operation: marked('exportItems'), req: req('GET'), path: '/p', requestId: 'r', auth: undefined, clientAddress: '192.0.2.1' }, input);
    assert.ok('stream' in answer);
    return (await answer.stream.toArray()).join('');
  };
  let failing = false;
  assert.equal(await body(), 'replica\nb\n', 'every chunk, the first one included');
  failing = true;
  assert.equal(await body(), 'primary\nb\n');
});

test('only a GET may be marked x-read-replica, and only with true', () => {
  const op = (method: string, mark: unknown) => ({ method, path: '/x', operationId: 'x', 'x-read-replica': mark }) as unknown as ContractOperation;
  assert.doesNotThrow(() => checkReplicaReads([op('get', true), { method: 'post', path: '/y', operationId: 'y' } as unknown as ContractOperation]));
  assert.throws(() => checkReplicaReads([op('post', true)]), /x-read-replica/);
  assert.throws(() => checkReplicaReads([op('get', 'yes')]), /x-read-replica/);
});

test('the contract marks the reads that tolerate lag, and nothing that writes or counts', async () => {
  const { backend } = await loadContract();
  const markedIds = backend.router.getOperations().filter((o) => readsFromReplica(o as RoutedOperation)).map((o) => o.operationId).sort();
  assert.deepEqual(markedIds, ['exportItems', 'getEvent', 'getWebhookDelivery', 'listEvents', 'listItemVersions', 'listItems', 'listWebhookDeliveries']);
});
