// The connection level: what the HTTP parser refuses and refused bodies are answered in the envelope,
// the answer reaches a client that is still sending, and a keep-alive connection survives a refusal.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { Agent, fetch as undiciFetch } from 'undici';
import { DRAIN_LIMIT } from '../../platform/http/body.ts';
import { RawConnection, rawRequest } from '../helpers/raw-http.ts';
import type { RawResponse } from '../helpers/raw-http.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
const UPSERT = '/api/v1/catalog/items/upsert';
// Over the 1 MiB limit of a single upsert, under the size a refusal drains to keep the connection.
const TWO_MB = 2 * 1024 * 1024;
// The largest body a refusal still drains: more than the socket buffers take at once, so the
// client is still sending when the answer comes (a 2 MB body fits in them on loopback).
const ALMOST_DRAIN_LIMIT = DRAIN_LIMIT - 64 * 1024;
let service: TestService;
let tenant: Tenant;

before(async () => {
  service = await startTestService(FILE);
  tenant = await service.newTenant();
});
after(async () => {
  await service?.close();
});

/** The status, the envelope with `code` and an X-Request-Id that the envelope repeats. */
function assertEnvelope(response: RawResponse, status: number, code: string): void {
  const where = `${response.status} ${response.body.slice(0, 300)}`;
  assert.equal(response.status, status, where);
  assert.match(response.headers['content-type'] ?? '', /^application\/json/, where);
  const body = JSON.parse(response.body) as { success: unknown; error: { code: string; message: string; requestId: string } };
  assert.equal(body.success, false, where);
  assert.equal(body.error.code, code, where);
  assert.ok(body.error.message.length > 0, where);
  assert.ok(response.headers['x-request-id'], `no X-Request-Id: ${where}`);
  assert.equal(body.error.requestId, response.headers['x-request-id'], where);
}

/** Sends `bytes` on a new connection; the one answer, and that the server then closed the connection. */
async function refusedOnNewConnection(bytes: Buffer): Promise<{ response: RawResponse; connection: RawConnection }> {
  const connection = await RawConnection.open(service.url);
  connection.write(bytes);
  const response = await connection.next();
  await connection.closed;
  assert.equal(response.headers.connection, 'close');
  assert.equal(connection.leftover(), '', 'nothing may follow the answer');
  return { response, connection };
}

const upsertBody = (externalId: string, padding = 0) =>
  JSON.stringify({ externalSystem: 'erp', externalId, name: 'Transport', description: 'd'.repeat(padding) });

test('headers over the parser limit are a 431 in the envelope with an X-Request-Id', async () => {
  for (const size of [20_000, 256 * 1024]) {
    const bytes = rawRequest('GET', '/api/v1/catalog/items', { authorization: `Bearer ${tenant.key}`, 'x-padding': 'p'.repeat(size) });
    const { response, connection } = await refusedOnNewConnection(bytes);
    assertEnvelope(response, 431, 'request_header_fields_too_large');
    assert.deepEqual(connection.errors, [], `headers of ${size} bytes`);
  }
});

test('a request the parser cannot frame is a 400 bad_request in the envelope with an X-Request-Id', async () => {
  const malformed = [
    // Content-Length together with Transfer-Encoding: request smuggling's shape.
    Buffer.from('POST /api/v1/catalog/items/upsert HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'),
    Buffer.from('POST /api/v1/catalog/items/upsert HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'),
    Buffer.from('GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: nine\r\n\r\n'),
    Buffer.from('HELLO\r\n\r\n'),
  ];
  for (const bytes of malformed) {
    const { response } = await refusedOnNewConnection(bytes);
    assertEnvelope(response, 400, 'bad_request');
  }
});

test('an HTTP/1.1 request without Host is a 400 bad_request in the envelope', async () => {
  const connection = await RawConnection.open(service.url);
  connection.write('GET /healthz HTTP/1.1\r\n\r\n');
  assertEnvelope(await connection.next(), 400, 'bad_request');
  connection.close();
});

test('a 413 for a body sent with Connection: close reaches the client every time, while it is still sending', async () => {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const bytes = rawRequest('POST', UPSERT, {
      authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', connection: 'close',
    }, upsertBody(`close-${attempt}`, ALMOST_DRAIN_LIMIT));
    const { response, connection } = await refusedOnNewConnection(bytes);
    assertEnvelope(response, 413, 'payload_too_large');
    assert.deepEqual(connection.errors, [], `attempt ${attempt}`);
  }
});

test('a body too large to drain is refused with Connection: close, and the answer still arrives', async () => {
  const framings: Array<Record<string, string>> = [{ 'content-type': 'application/json' }, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }];
  for (const headers of framings) {
    const payload = Buffer.from(upsertBody('huge', DRAIN_LIMIT + TWO_MB));
    const body = headers['transfer-encoding'] ? Buffer.concat([Buffer.from(`${payload.length.toString(16)}\r\n`), payload, Buffer.from('\r\n0\r\n\r\n')]) : payload;
    const { response, connection } = await refusedOnNewConnection(rawRequest('POST', UPSERT, { authorization: `Bearer ${tenant.key}`, ...headers }, body));
    assertEnvelope(response, 413, 'payload_too_large');
    assert.deepEqual(connection.errors, [], JSON.stringify(headers));
  }
});

test('on one keep-alive connection: 413 for 2 MB, 413 for a streamed body, 415, then a valid request, all answered', async () => {
  const agent = new Agent({ connections: 1, pipelining: 1 });
  let connects = 0;
  const disconnects: string[] = [];
  agent.on('connect', () => { connects += 1; });
  agent.on('disconnect', (_origin, _targets, error) => { disconnects.push(error?.message ?? 'closed'); });
  try {
    const post = (body: string | ReadableStream, contentType = 'application/json') => undiciFetch(`${service.url}${UPSERT}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': contentType },
      body,
      duplex: 'half',
      dispatcher: agent,
    });
    const answers: Array<[number, string]> = [];
    const record = async (answer: Awaited<ReturnType<typeof post>>) => {
      const body = (await answer.json()) as { error?: { code: string }; data?: unknown };
      answers.push([answer.status, body.error?.code ?? 'ok']);
    };
    await record(await post(upsertBody('keep-1', TWO_MB)));
    // Without Content-Length the limit is found while reading.
    await record(await post(Readable.toWeb(Readable.from([Buffer.from(upsertBody('keep-2', TWO_MB))])) as ReadableStream));
    await record(await post('name=x', 'application/x-www-form-urlencoded'));
    await record(await post(upsertBody('keep-3')));
    assert.deepEqual(answers, [[413, 'payload_too_large'], [413, 'payload_too_large'], [415, 'unsupported_media_type'], [201, 'ok']]);
    assert.equal(connects, 1, `one connection carried every request (disconnects: ${disconnects.join('; ') || 'none'})`);
    assert.deepEqual(disconnects, []);
  } finally {
    await agent.close();
  }
});
