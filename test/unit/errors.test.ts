// The error renderer: product errors keep their code and status; anything else is a bare 500.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProductError } from '../../platform/errors.ts';
import { RateLimitedError, renderError } from '../../platform/http/errors.ts';
import { validationDetails } from '../../platform/http/request-validation.ts';

test('a product error renders with its status, code, details and the request id', () => {
  const rendered = renderError(new ProductError('conflict', 'SKU taken', [{ path: 'sku', message: 'in use' }]), 'req_1');
  assert.equal(rendered.status, 409);
  assert.deepEqual(rendered.body, {
    success: false,
    error: { code: 'conflict', message: 'SKU taken', details: [{ path: 'sku', message: 'in use' }], requestId: 'req_1' },
  });
});

test('a 429 carries retryAfter inside error', () => {
  const rendered = renderError(new RateLimitedError(17), 'req_2');
  assert.equal(rendered.status, 429);
  assert.equal(rendered.body.error.retryAfter, 17);
});

test('an unexpected error is a 500 that leaks nothing of it', () => {
  const rendered = renderError(new TypeError('secret internals at /srv/db.ts:12'), 'req_3');
  assert.equal(rendered.status, 500);
  assert.equal(rendered.body.error.code, 'error');
  assert.doesNotMatch(JSON.stringify(rendered.body), /internals|db\.ts/);
  assert.match(rendered.body.error.message, /req_3/);
});

test('Ajv errors become dotted paths relative to the body', () => {
  const details = validationDetails([
    { instancePath: '/requestBody/items/3/sku', keyword: 'maxLength', params: { limit: 100 }, schemaPath: '', message: 'must NOT have more than 100 characters' },
    { instancePath: '/requestBody', keyword: 'required', params: { missingProperty: 'name' }, schemaPath: '', message: "must have required property 'name'" },
    { instancePath: '/requestBody/media/0', keyword: 'additionalProperties', params: { additionalProperty: 'alt' }, schemaPath: '', message: 'x' },
    { instancePath: '/query/limit', keyword: 'maximum', params: { limit: 200 }, schemaPath: '', message: 'must be <= 200' },
  ]);
  assert.deepEqual(details.map((d) => d.path), ['items.3.sku', 'name', 'media.0.alt', 'query.limit']);
});
