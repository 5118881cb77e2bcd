// Checks every response a test receives against openapi.yaml: status, headers and body schema.
import assert from 'node:assert/strict';
import { API_PREFIX, loadContract } from '../../platform/http/contract.ts';
import type { Contract, ContractOperation } from '../../platform/http/contract.ts';

let contractPromise: Promise<Contract> | undefined;
export const contract = (): Promise<Contract> => (contractPromise ??= loadContract());

const ERROR_CODES = new Set([
  'validation_error', 'unauthorized', 'forbidden', 'not_found', 'method_not_allowed', 'conflict', 'payload_too_large',
  'unsupported_media_type', 'unprocessable', 'too_many_requests', 'not_implemented', 'error',
  'bad_request', 'request_timeout', 'request_header_fields_too_large', 'service_unavailable',
]);

const HTTP_LAYER_CODES = new Set(['bad_request', 'request_timeout', 'request_header_fields_too_large']);

// What an answer may carry without the contract naming it: HTTP's own framing, and the CORS
// headers, which the API's description covers (sent only to origins in CORS_ALLOWED_ORIGINS).
const FRAMING_AND_CORS = new Set([
  'content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding',
  'vary', 'access-control-allow-origin', 'access-control-expose-headers',
]);

/** The headers the contract declares for this status of the operation (lower case). */
function declaredHeaders(operation: ContractOperation, status: number): Set<string> {
  const responses = (operation.responses ?? {}) as Record<string, { headers?: Record<string, unknown> }>;
  const response = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
  return new Set(Object.keys(response?.headers ?? {}).map((name) => name.toLowerCase()));
}

function assertErrorEnvelope(body: unknown, status: number, where: string): void {
  const envelope = body as { success?: unknown; error?: { code?: unknown; message?: unknown; details?: unknown; retryAfter?: unknown } };
  assert.equal(envelope.success, false, `${where}: error body must have success:false`);
  assert.ok(envelope.error && typeof envelope.error.message === 'string', `${where}: error.message must be a string`);
  assert.ok(ERROR_CODES.has(String(envelope.error.code)), `${where}: unknown error code ${String(envelope.error.code)}`);
  if (status === 429) assert.ok(Number.isInteger(envelope.error.retryAfter), `${where}: 429 needs error.retryAfter`);
  if (envelope.error.details !== undefined) {
    assert.ok(Array.isArray(envelope.error.details), `${where}: details must be an array`);
    for (const d of envelope.error.details as Array<{ path?: unknown; message?: unknown }>) {
      assert.equal(typeof d.path, 'string', `${where}: details[].path must be a string`);
      assert.equal(typeof d.message, 'string', `${where}: details[].message must be a string`);
    }
  }
}

/** Asserts that `response` (already received for `method url`) is what the contract promises. */
export async function assertMatchesContract(method: string, url: string, response: Response, body: unknown): Promise<void> {
  const { backend } = await contract();
  const path = new URL(url).pathname;
  const where = `${method} ${path} → ${response.status}`;
  assert.ok(response.headers.get('x-request-id'), `${where}: X-Request-Id missing`);
  if (!path.startsWith(API_PREFIX)) return;
  const code = (body as { error?: { code?: unknown } } | undefined)?.error?.code;
  if (typeof code === 'string' && HTTP_LAYER_CODES.has(code)) {
    // The contract: refused before any route or key is looked at, so no rate-limit headers and no operation.
    assertErrorEnvelope(body, response.status, where);
    return;
  }
  // A 503 for an unreachable database has them only when the request was counted before it went away.
  const counted = !(code === 'service_unavailable' && !response.headers.has('x-ratelimit-limit'));
  for (const header of counted ? ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'] : []) {
    assert.match(response.headers.get(header) ?? '', /^\d+$/, `${where}: ${header} missing or not an integer`);
  }
  if (response.status === 429 || response.status === 503) assert.match(response.headers.get('retry-after') ?? '', /^\d+$/, `${where}: Retry-After missing`);
  const operation = backend.matchOperation({ method, path, headers: {} }) as ContractOperation | undefined;
  if (response.status >= 400) assertErrorEnvelope(body, response.status, where);
  if (!operation) {
    assert.ok([404, 405, 401, 429].includes(response.status), `${where}: unrouted request must be 404/405/401/429`);
    return;
  }
  const documented = Object.keys(operation.responses ?? {});
  assert.ok(
    documented.includes(String(response.status)) || documented.includes('default'),
    `${where}: status not documented for ${operation.operationId} (documented: ${documented.join(', ')})`,
  );
  const declared = declaredHeaders(operation, response.status);
  const undeclared = [...response.headers.keys()].filter((name) => !FRAMING_AND_CORS.has(name) && !declared.has(name));
  assert.deepEqual(undeclared, [], `${where}: headers the contract does not declare for ${operation.operationId}`);
  if (isJson(response.headers.get('content-type'))) {
    const result = backend.validateResponse(body, operation, response.status);
    assert.ok(result.valid, `${where}: body does not match the contract: ${JSON.stringify(result.errors)}\n${JSON.stringify(body).slice(0, 2000)}`);
  }
}

/** fetch, then check the answer against the contract; the body is parsed (JSON) or text. */
const isJson = (contentType: string | null) => /^application\/(?:[\w.-]+\+)?json\b/.test(contentType ?? '');

export async function checkedFetch(url: string, init: RequestInit = {}): Promise<{ response: Response; body: any }> {
  const response = await fetch(url, init);
  const text = await response.text();
  const body = isJson(response.headers.get('content-type')) && text !== '' ? JSON.parse(text) : text;
  await assertMatchesContract(init.method ?? 'GET', url, response, body);
  return { response, body };
}

/** A fetch for the generated client that checks every answer it gets against the contract. */
export function contractCheckingFetch(): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const response = await fetch(request);
    const text = await response.clone().text();
    const body = isJson(response.headers.get('content-type')) && text !== '' ? JSON.parse(text) : text;
    await assertMatchesContract(request.method, request.url, response, body);
    return response;
  }) as typeof fetch;
}
