// What the server writes for a request its HTTP parser refuses: a whole HTTP/1.1 answer in the error envelope.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientErrorCode, rawErrorResponse } from '../../platform/http/transport.ts';
import { parseResponse } from '../helpers/raw-http.ts';

const parserError = (code: string, reason?: string) => Object.assign(new Error(reason ?? code), { code, reason });

test('parser errors map to the catalogue: 431, 413, 408, else 400 bad_request; socket errors to nothing', () => {
  assert.equal(clientErrorCode(parserError('HPE_HEADER_OVERFLOW'))?.code, 'request_header_fields_too_large');
  assert.equal(clientErrorCode(parserError('HPE_CHUNK_EXTENSIONS_OVERFLOW'))?.code, 'payload_too_large');
  assert.equal(clientErrorCode(parserError('ERR_HTTP_REQUEST_TIMEOUT'))?.code, 'request_timeout');
  const framing = clientErrorCode(parserError('HPE_INVALID_TRANSFER_ENCODING', "Transfer-Encoding can't be present with Content-Length"));
  assert.equal(framing?.code, 'bad_request');
  assert.match(framing?.message ?? '', /Transfer-Encoding can't be present/);
  assert.equal(clientErrorCode(parserError('ECONNRESET')), undefined);
  assert.equal(clientErrorCode(parserError('EPIPE')), undefined);
});

test('the raw answer is one complete response: status, JSON envelope, X-Request-Id, Connection: close', () => {
  for (const [code, status] of [['request_header_fields_too_large', 431], ['request_timeout', 408], ['bad_request', 400]] as const) {
    const { status: written, bytes } = rawErrorResponse(code, 'Nope — “quoted”.', 'req_abc');
    assert.equal(written, status);
    const parsed = parseResponse(bytes);
    assert.ok(parsed, 'a whole response');
    assert.equal(parsed.rest.length, 0, 'nothing after it');
    assert.equal(parsed.response.status, status);
    assert.equal(parsed.response.headers['x-request-id'], 'req_abc');
    assert.equal(parsed.response.headers.connection, 'close');
    assert.match(parsed.response.headers['content-type'] ?? '', /^application\/json/);
    assert.deepEqual(JSON.parse(parsed.response.body), { success: false, error: { code, message: 'Nope — “quoted”.', requestId: 'req_abc' } });
  }
});
