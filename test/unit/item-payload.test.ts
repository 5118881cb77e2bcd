// normalizeItem: every validation rule with its detail path, normalization, and the export round trip.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizeItem } from '../../domain/items/payload.ts';
import type { ErrorDetail } from '../../platform/errors.ts';

type Payload = Record<string, unknown>;
const valid: Payload = { externalSystem: 'erp', externalId: 'SKU-0001', name: 'Red T-shirt' };
const withFields = (fields: Payload): Payload => ({ ...valid, ...fields });
const media = (n: number, extra: Payload = {}) =>
  Array.from({ length: n }, (_, i) => ({ url: `https://cdn.example.com/${i}.jpg`, ...extra }));

function detailsOf(payload: unknown, prefix = 'items.7'): ErrorDetail[] {
  const result = normalizeItem(payload, prefix);
  assert.equal(result.ok, false, 'expected a validation failure');
  return result.ok ? [] : result.details;
}

// [rule, payload, expected details (exact, in order)]
const rules: Array<[string, unknown, ErrorDetail[]]> = [
  ['not an object', 'nope', [{ path: 'items.7', message: 'must be an object' }]],
  ['required fields', {}, [
    { path: 'items.7.externalSystem', message: 'is required' },
    { path: 'items.7.externalId', message: 'is required' },
    { path: 'items.7.name', message: 'is required' },
  ]],
  ['unknown field', withFields({ colour: 'red' }), [{ path: 'items.7.colour', message: 'is not a known field' }]],
  ['unknown field inside media', withFields({ media: [{ url: 'https://x.example/a.jpg', alt: 'x' }] }),
    [{ path: 'items.7.media.0.alt', message: 'is not a known field' }]],
  ['externalSystem characters', withFields({ externalSystem: 'erp one' }),
    [{ path: 'items.7.externalSystem', message: 'must contain only letters, digits and the characters . _ : -' }]],
  ['externalSystem ≤ 64', withFields({ externalSystem: 'e'.repeat(65) }), [{ path: 'items.7.externalSystem', message: 'must have at most 64 characters' }]],
  ['externalId ≤ 255', withFields({ externalId: 'i'.repeat(256) }), [{ path: 'items.7.externalId', message: 'must have at most 255 characters' }]],
  ['externalId not blank', withFields({ externalId: '   ' }), [{ path: 'items.7.externalId', message: 'must not be empty' }]],
  ['name not blank after trimming', withFields({ name: ' \t ' }), [{ path: 'items.7.name', message: 'must not be empty' }]],
  ['name ≤ 500', withFields({ name: 'n'.repeat(501) }), [{ path: 'items.7.name', message: 'must have at most 500 characters' }]],
  ['name type', withFields({ name: 5 }), [{ path: 'items.7.name', message: 'must be a string' }]],
  ['sku not blank', withFields({ sku: '  ' }), [{ path: 'items.7.sku', message: 'must not be empty' }]],
  ['sku ≤ 100', withFields({ sku: 's'.repeat(101) }), [{ path: 'items.7.sku', message: 'must have at most 100 characters' }]],
  ['sku type', withFields({ sku: 12 }), [{ path: 'items.7.sku', message: 'must be a string or null' }]],
  ['price ≥ 0', withFields({ price: -1 }), [{ path: 'items.7.price', message: 'must not be negative' }]],
  ['price ≤ 4 decimals', withFields({ price: 1.23456 }), [{ path: 'items.7.price', message: 'must have at most 4 decimal places' }]],
  ['cost ≤ 4 decimals', withFields({ cost: 1e-7 }), [{ path: 'items.7.cost', message: 'must have at most 4 decimal places' }]],
  ['price type', withFields({ price: '19.90' }), [{ path: 'items.7.price', message: 'must be a number or null' }]],
  ['weight ≥ 0', withFields({ weight: -0.5 }), [{ path: 'items.7.weight', message: 'must not be negative' }]],
  ['gtin13 13 digits', withFields({ gtin13: '400638133393' }), [{ path: 'items.7.gtin13', message: 'must have exactly 13 digits' }]],
  ['gtin13 check digit', withFields({ gtin13: '4006381333932' }), [{ path: 'items.7.gtin13', message: 'must have a valid GTIN-13 check digit' }]],
  ['ncm 8 digits', withFields({ ncm: '6109.10' }), [{ path: 'items.7.ncm', message: 'must have 8 digits (NNNNNNNN or NNNN.NN.NN)' }]],
  ['category name required', withFields({ category: {} }), [{ path: 'items.7.category.name', message: 'is required' }]],
  ['brand name not blank', withFields({ brand: { name: ' ' } }), [{ path: 'items.7.brand.name', message: 'must not be empty' }]],
  ['tags ≤ 100', withFields({ tags: Array.from({ length: 101 }, (_, i) => `t${i}`) }), [{ path: 'items.7.tags', message: 'must have at most 100 entries' }]],
  ['tag not blank', withFields({ tags: ['ok', '  '] }), [{ path: 'items.7.tags.1', message: 'must not be empty' }]],
  ['tag ≤ 100 characters', withFields({ tags: ['t'.repeat(101)] }), [{ path: 'items.7.tags.0', message: 'must have at most 100 characters' }]],
  ['metadata object', withFields({ metadata: [1] }), [{ path: 'items.7.metadata', message: 'must be an object or null' }]],
  ['metadata ≤ 16 KB', withFields({ metadata: { blob: 'x'.repeat(16 * 1024) } }), [{ path: 'items.7.metadata', message: 'must be at most 16384 bytes as JSON' }]],
  ['metadata keys equal after NFC', withFields({ metadata: { 'Café': 1, 'Cafe\u0301': 2 } }),
    [{ path: 'items.7.metadata.Café', message: 'is the same key as another one after Unicode normalization' }]],
  ['metadata lone surrogate', withFields({ metadata: { a: ['ok', 'bad\uD800'] } }), [{ path: 'items.7.metadata.a.1', message: 'must be valid Unicode text' }]],
  ['name lone surrogate', withFields({ name: 'bad\uDC00' }), [{ path: 'items.7.name', message: 'must be valid Unicode text' }]],
  // One rule for every text, whatever the field: Postgres stores neither NUL nor a lone surrogate.
  ['NUL in the identity', withFields({ externalId: 'a\u0000b' }), [{ path: 'items.7.externalId', message: 'must not contain the NUL character (U+0000)' }]],
  ['NUL in a metadata key and a tag', withFields({ metadata: { 'k\u0000': 1 }, tags: ['ok', '\u0000'] }), [
    { path: 'items.7.metadata.k\uFFFD', message: 'has a key that must not contain the NUL character (U+0000)' },
    { path: 'items.7.tags.1', message: 'must not contain the NUL character (U+0000)' },
  ]],
  ['lone surrogate in the identity', withFields({ externalId: '\uD800' }), [{ path: 'items.7.externalId', message: 'must be valid Unicode text' }]],
  ['NUL in a media url', withFields({ media: [{ url: 'https://x.example/a\u0000.jpg' }] }),
    [{ path: 'items.7.media.0.url', message: 'must not contain the NUL character (U+0000)' }, { path: 'items.7.media.0.url', message: 'must be an absolute http or https URL' }]],
  ['ncm half-dotted', withFields({ ncm: '8471.3012' }), [{ path: 'items.7.ncm', message: 'must have 8 digits (NNNNNNNN or NNNN.NN.NN)' }]],
  ['price below 10¹²', withFields({ price: 1e16 }), [{ path: 'items.7.price', message: 'must be less than 1000000000000' }]],
  ['weight below 10⁹', withFields({ weight: 1e9 }), [{ path: 'items.7.weight', message: 'must be less than 1000000000' }]],
  ['media ≤ 50', withFields({ media: media(51) }), [{ path: 'items.7.media', message: 'must have at most 50 entries' }]],
  ['media url http(s)', withFields({ media: [{ url: 'ftp://cdn.example.com/a.jpg' }] }), [{ path: 'items.7.media.0.url', message: 'must be an absolute http or https URL' }]],
  ['media url absolute', withFields({ media: [{ url: '/a.jpg' }] }), [{ path: 'items.7.media.0.url', message: 'must be an absolute http or https URL' }]],
  ['media url ≤ 2048 (2049 here)', withFields({ media: [{ url: `https://x.example/${'a'.repeat(2031)}` }] }), [{ path: 'items.7.media.0.url', message: 'must have at most 2048 characters' }]],
  ['media url required', withFields({ media: [{ role: 'primary' }] }), [{ path: 'items.7.media.0.url', message: 'is required' }]],
  ['media role', withFields({ media: [{ url: 'https://x.example/a.jpg', role: 'hero' }] }), [{ path: 'items.7.media.0.role', message: 'must be one of: primary, gallery' }]],
  ['media sortOrder integer ≥ 0', withFields({ media: [{ url: 'https://x.example/a.jpg', sortOrder: 1.5 }, { url: 'https://x.example/b.jpg', sortOrder: -1 }] }), [
    { path: 'items.7.media.0.sortOrder', message: 'must be an integer' },
    { path: 'items.7.media.1.sortOrder', message: 'must not be negative' },
  ]],
  ['at most one primary', withFields({ media: media(3, { role: 'primary' }) }), [
    { path: 'items.7.media.1.role', message: 'must not be primary: media.0 already is (at most one primary)' },
    { path: 'items.7.media.2.role', message: 'must not be primary: media.0 already is (at most one primary)' },
  ]],
  ['the same image twice', withFields({ media: [{ url: 'https://x.example/a.jpg?b=1&a=2' }, { url: 'https://X.example/a.jpg?a=2&b=1&utm_source=z' }] }),
    [{ path: 'items.7.media.1.url', message: 'is the same image as media.0.url' }]],
  ['trackStock boolean', withFields({ trackStock: 'yes' }), [{ path: 'items.7.trackStock', message: 'must be a boolean' }]],
];

for (const [rule, payload, expected] of rules) {
  test(`validation: ${rule}`, () => assert.deepEqual(detailsOf(payload), expected));
}

test('values at their limits are accepted', () => {
  const result = normalizeItem({
    externalSystem: `Az09._:-${'e'.repeat(56)}`, externalId: 'i'.repeat(255), name: ` ${'n'.repeat(500)} `, sku: 's'.repeat(100),
    price: 19.9999, cost: 1e-4, weight: 0.123456789, gtin13: '0000000000000', ncm: '6109.10.00',
    tags: Array.from({ length: 100 }, (_, i) => `${i}`.padEnd(100, 't')),
    metadata: { blob: 'x'.repeat(16 * 1024 - '{"blob":""}'.length) },
    media: [{ url: `https://x.example/${'a'.repeat(2030)}`, role: 'primary' }, ...media(49, { role: 'gallery', sortOrder: 1 })],
  });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.details));
});

test('every problem of the schema is reported at once', () => {
  const details = detailsOf(withFields({ sku: '', price: -1, extra: 1, tags: [''] }));
  assert.deepEqual(details.map((d) => d.path).sort(), ['items.7.extra', 'items.7.price', 'items.7.sku', 'items.7.tags.0']);
});

test("the service's rules are reported together with the schema's complaints", () => {
  const details = detailsOf(withFields({ sku: '', gtin13: '4006381333932', price: 1.23456, metadata: { 'a\u0000': 1 } }));
  assert.deepEqual(details.map((d) => d.path).sort(), ['items.7.gtin13', 'items.7.metadata.a\uFFFD', 'items.7.price', 'items.7.sku']);
});

test('the path prefix may end with a dot or be empty', () => {
  assert.deepEqual(detailsOf(withFields({ sku: '' }), 'items.3.'), [{ path: 'items.3.sku', message: 'must not be empty' }]);
  assert.deepEqual(detailsOf(withFields({ sku: '' }), ''), [{ path: 'sku', message: 'must not be empty' }]);
  assert.deepEqual(detailsOf(withFields({ sku: '' }), 'items.3.'), detailsOf(withFields({ sku: '' }), 'items.3'));
});

test('a failure returns the externalId when it reads as a string, trimmed', () => {
  const result = normalizeItem({ externalSystem: 'erp', externalId: '  A-1 ', price: -1 }, 'items.0');
  assert.equal(result.ok, false);
  assert.equal(!result.ok && result.externalId, 'A-1');
  const noId = normalizeItem({ externalSystem: 'erp', externalId: 42, name: 'x' });
  assert.ok(!noId.ok && !('externalId' in noId));
  const notObject = normalizeItem(['x']);
  assert.ok(!notObject.ok && notObject.externalId === undefined);
});

test('normalization: trimming, NFC, defaults, ncm dots, tag order, media order', () => {
  const input = {
    externalSystem: ' erp ', externalId: ' A-1 ', name: ' Cafe\u0301 ', sku: ' S-1 ', description: '  ',
    price: 10, ncm: '6109.10.00', category: { name: ' T-Shirts ' }, brand: null,
    tags: ['b', ' a', 'B', 'a ', '\u{1F600}', '\uFB01'],
    metadata: { ' k ': ' Cafe\u0301 ' },
    media: [
      { url: ' https://x.example/z.jpg ', sortOrder: 0 },
      { url: 'https://x.example/b.jpg', role: 'primary', sortOrder: 2 },
      { url: 'https://x.example/a.jpg' },
    ],
  };
  const frozen = structuredClone(input);
  const result = normalizeItem(input);
  assert.ok(result.ok);
  assert.deepEqual(input, frozen, 'the input is not mutated');
  const { contentHash, media, ...rest } = result.item;
  assert.deepEqual(rest, {
    externalSystem: 'erp', externalId: 'A-1', sku: 'S-1', name: 'Café', description: null,
    price: 10, cost: null, weight: null, gtin13: null, ncm: '61091000',
    category: { name: 'T-Shirts' }, brand: null,
    tags: ['B', 'a', 'b', '\uFB01', '\u{1F600}'], // code point order: U+FB01 before U+1F600
    metadata: { ' k ': ' Café ' }, trackStock: false,
  });
  assert.deepEqual(media.map((m) => [m.url, m.role, m.sortOrder]), [
    ['https://x.example/a.jpg', 'gallery', 0],
    ['https://x.example/z.jpg', 'gallery', 0],
    ['https://x.example/b.jpg', 'primary', 2],
  ]);
  assert.match(media[0]!.sourceUrlHash, /^[0-9a-f]{64}$/);
  assert.match(contentHash, /^[0-9a-f]{64}$/);
});

test('metadata keeps a "__proto__" key as data', () => {
  const result = normalizeItem(withFields({ metadata: JSON.parse('{"__proto__":{"x":1}}') }));
  assert.ok(result.ok);
  assert.deepEqual(Object.keys(result.item.metadata!), ['__proto__']);
  assert.equal(Object.getPrototypeOf(result.item.metadata), Object.prototype);
});


test('a media sortOrder nested 10,000 arrays deep is a validation failure, not a stack overflow', () => {
  let deep: unknown = 1;
  for (let i = 0; i < 10_000; i++) deep = [deep];
  const details = detailsOf(withFields({ media: [{ url: 'https://cdn.example.com/a.jpg', sortOrder: deep }, { url: 'https://cdn.example.com/b.jpg', sortOrder: deep }] }));
  assert.ok(details.some((d) => d.path === 'items.7.media.0.sortOrder'), JSON.stringify(details).slice(0, 300));
});
