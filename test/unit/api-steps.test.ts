// Each step of an API request alone (platform/http/api-steps.ts): caller, admission, route, scope, body, validation.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { ProductError } from '../../platform/errors.ts';
import {
  admitCaller, authorize, decodePathParameters, describeRequest, identifyCaller, readRequestBody, routeRequest, validateRequest,
} from '../../platform/http/api-steps.ts';
import type { Caller } from '../../platform/http/api-steps.ts';
import { API_PREFIX, loadContract } from '../../platform/http/contract.ts';
import type { Auth, Services } from '../../platform/http/types.ts';

const contract = await loadContract();
const services = (extra: Partial<Services> = {}) => ({ contract, config: { environment: 'production', trustProxyHops: 0 }, ...extra }) as Services;
const allowed = { allowed: true, limit: 100, remaining: 99, resetAt: 0, retryAfter: 0 };
const auth = (scopes: string[]): Auth => ({ keyId: 'k', kind: 'key', catalogId: 'c', scopes, tier: 'free' });

/** An incoming request as the steps read it: method, URL, headers and a body stream. */
function request(method: string, path: string, headers: Record<string, string> = {}, body?: string): IncomingMessage {
  const req = Readable.from(body === undefined ? [] : [Buffer.from(body)]) as unknown as IncomingMessage;
  return Object.assign(req, { method, url: path, headers, socket: { remoteAddress: '127.0.0.1' } });
}
const routed = (method: string, path: string) => {
  const url = new URL(`${API_PREFIX}${path}`, 'http://localhost');
  const described = describeRequest(request(method, url.pathname + url.search), url);
  return { request: described, operation: routeRequest(services(), described) };
};
async function refusal(work: () => unknown): Promise<ProductError> {
  try {
    await work();
  } catch (error) {
    assert.ok(error instanceof ProductError, String(error));
    return error;
  }
  assert.fail('expected a refusal');
}

test('identifyCaller counts the key once, and again after a lost connection rolled the count back', async () => {
  let calls = 0;
  const countKey = async (token: string) => {
    calls += 1;
    if (calls === 1) throw Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    return { auth: { ...auth(['catalog:read']), keyId: token }, rateLimit: allowed, allowedCidrs: null };
  };
  const caller = await identifyCaller(services({ countKey }), request('GET', '/', { authorization: 'Bearer cat_live_abc' }));
  assert.equal(caller.auth?.keyId, 'cat_live_abc');
  assert.equal(calls, 2);
});

test('admitCaller refuses a spent budget before a bad key, and admits the rest', async () => {
  const spent: Caller = { auth: undefined, rateLimit: { ...allowed, allowed: false, remaining: 0, retryAfter: 7 }, refusal: { code: 'unauthorized', message: 'bad key' }, address: '192.0.2.1' };
  const limited = await refusal(() => admitCaller(spent));
  assert.equal(limited.code, 'too_many_requests');
  const refused = await refusal(() => admitCaller({ ...spent, rateLimit: allowed }));
  assert.deepEqual([refused.code, refused.message], ['unauthorized', 'bad key']);
  const fenced = await refusal(() => admitCaller({ ...spent, rateLimit: allowed, refusal: { code: 'forbidden', message: 'not from here' } }));
  assert.deepEqual([fenced.code, fenced.message], ['forbidden', 'not from here']);
  admitCaller({ auth: undefined, rateLimit: allowed, address: '192.0.2.1' });
});

test('describeRequest keeps repeated query parameters, and a parameter named __proto__ as data', () => {
  const url = new URL(`${API_PREFIX}/items?tag=a&tag=b&__proto__=x`, 'http://localhost');
  const { query } = describeRequest(request('GET', url.pathname + url.search), url);
  assert.deepEqual(query.tag, ['a', 'b']);
  assert.equal(Object.getPrototypeOf(query), Object.prototype);
  assert.equal(Object.getOwnPropertyDescriptor(query, '__proto__')?.value, 'x');
});

test('routeRequest finds the operation, or answers 405 with the methods of the path, or 404', async () => {
  assert.equal(routed('GET', '/items').operation.operationId, 'listItems');
  const notAllowed = await refusal(() => routed('PUT', '/items'));
  assert.equal(notAllowed.code, 'method_not_allowed');
  assert.equal((notAllowed as ProductError & { allow: string }).allow, 'GET');
  assert.equal((await refusal(() => routed('GET', '/nowhere'))).code, 'not_found');
});

test('authorize admits anyone to a public operation and a key with the scope to the others', async () => {
  authorize(routed('GET', '/openapi.json').operation, undefined);
  const { operation } = routed('GET', '/items');
  assert.equal((await refusal(() => authorize(operation, undefined))).code, 'unauthorized');
  assert.equal((await refusal(() => authorize(operation, auth(['webhooks:manage'])))).code, 'forbidden');
  authorize(operation, auth(['catalog:read']));
  // `x-scope: none` behind bearerAuth: any valid key, whatever its scopes, and never no key.
  const access = routed('GET', '/access').operation;
  authorize(access, auth([]));
  assert.equal((await refusal(() => authorize(access, undefined))).code, 'unauthorized');
});

test('decodePathParameters percent-decodes the path parameters and refuses a malformed one', async () => {
  const good = routed('GET', '/items/erp/SKU%201');
  assert.deepEqual(decodePathParameters(good.operation, good.request), { externalSystem: 'erp', externalId: 'SKU 1' });
  const bad = routed('GET', '/events/%zz');
  const refused = await refusal(() => decodePathParameters(bad.operation, bad.request));
  assert.deepEqual([refused.code, refused.details], ['validation_error', [{ path: 'path.eventId', message: 'is not valid percent-encoded UTF-8' }]]);
});

test('readRequestBody parses the JSON of an operation that takes a body and reads none otherwise', async () => {
  const upsert = routed('POST', '/items/upsert').operation;
  const sent = '{"externalSystem":"erp"}';
  const body = await readRequestBody(request('POST', '/', { 'content-type': 'application/json' }, sent), upsert);
  assert.deepEqual(body, { value: { externalSystem: 'erp' }, bytes: sent.length });
  const none = request('GET', '/', {}, 'ignored');
  assert.deepEqual(await readRequestBody(none, routed('GET', '/items').operation), { value: undefined, bytes: 0 });
  assert.equal(none.readableFlowing, true, 'a body the operation does not take is drained');
  const tooLarge = request('POST', '/', { 'content-type': 'application/json', 'content-length': String(2 * 1024 * 1024) }, '{}');
  assert.equal((await refusal(() => readRequestBody(tooLarge, upsert))).code, 'payload_too_large');
  const notJson = request('POST', '/', { 'content-type': 'text/plain' }, sent);
  assert.equal((await refusal(() => readRequestBody(notJson, upsert))).code, 'unsupported_media_type');
});

test('validateRequest coerces parameters to the contract\'s types and refuses, with details, what does not fit', async () => {
  const list = (query: string) => {
    const { request: described, operation } = routed('GET', `/items${query}`);
    return validateRequest(services(), operation, described, {}, { value: undefined, bytes: 0 });
  };
  assert.deepEqual(list('?limit=5').query, { limit: 5 });
  const invalid = await refusal(() => list('?limit=many'));
  assert.equal(invalid.code, 'validation_error');
  assert.ok(invalid.details?.some((detail) => detail.path.includes('limit')), JSON.stringify(invalid.details));
  const { request: described, operation } = routed('DELETE', '/webhooks/0190d6e4-8f5a-7c3e-9b1a-2f4d6e8a0b1c');
  const params = decodePathParameters(operation, described);
  assert.deepEqual(validateRequest(services(), operation, described, params, { value: undefined, bytes: 0 }).params, { id: '0190d6e4-8f5a-7c3e-9b1a-2f4d6e8a0b1c' });
});
