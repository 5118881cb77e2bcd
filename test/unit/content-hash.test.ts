// contentHash test vectors: what must not change the hash (normalization) and what must (real changes).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import canonicalize from 'canonicalize';
import { canonicalJson, hashInput } from '../../domain/items/content-hash.ts';
import { normalizeItem } from '../../domain/items/payload.ts';
import type { NormalizedItem } from '../../domain/items/normalized-item.ts';

type Payload = Record<string, unknown>;

const base: Payload = {
  externalSystem: 'erp',
  externalId: 'SKU-0001',
  sku: 'TSHIRT-RED-M',
  name: 'Red T-shirt, size M',
  description: '100% cotton.',
  price: 19.9,
  cost: 7.25,
  weight: 0.18,
  gtin13: '4006381333931',
  ncm: '61091000',
  category: { name: 'T-Shirts' },
  brand: { name: 'Acme' },
  tags: ['cotton', 'summer'],
  metadata: { season: 'SS26', origin: 'PT' },
  media: [
    { url: 'https://cdn.example.com/front.jpg', role: 'primary', sortOrder: 0 },
    { url: 'https://cdn.example.com/back.jpg?w=800&h=600', role: 'gallery', sortOrder: 1 },
  ],
  trackStock: true,
};
const withFields = (fields: Payload): Payload => ({ ...base, ...fields });
const without = (...names: string[]): Payload => Object.fromEntries(Object.entries(base).filter(([k]) => !names.includes(k)));
const reversedKeys = (p: Payload): Payload => Object.fromEntries(Object.entries(p).reverse());
const minimal: Payload = { externalSystem: 'erp', externalId: 'X', name: 'Café' };

// [name, payload A, payload B, same hash expected]
const vectors: Array<[string, Payload, Payload, boolean]> = [
  ['key order', base, reversedKeys(base), true],
  ['key order inside metadata', withFields({ metadata: { a: 1, b: { c: 2, d: 3 } } }), withFields({ metadata: { b: { d: 3, c: 2 }, a: 1 } }), true],
  ['surrounding whitespace', base, withFields({ name: '  Red T-shirt, size M\t', sku: ' TSHIRT-RED-M ', category: { name: ' T-Shirts ' }, tags: [' cotton', 'summer '] }), true],
  ['Unicode NFC vs NFD', minimal, { ...minimal, name: 'Cafe\u0301' }, true],
  ['Unicode NFC vs NFD in metadata keys and values', withFields({ metadata: { 'Café': 'Café' } }), withFields({ metadata: { 'Cafe\u0301': 'Cafe\u0301' } }), true],
  ['tag order and duplicates', base, withFields({ tags: ['summer', 'cotton', 'summer', ' cotton '] }), true],
  ['tracking parameters and query order in media URLs', base, withFields({ media: [
    { url: 'https://cdn.example.com/front.jpg?utm_source=feed&fbclid=abc', role: 'primary', sortOrder: 0 },
    { url: 'https://cdn.example.com/back.jpg?h=600&gclid=x&w=800', role: 'gallery', sortOrder: 1 },
  ] }), true],
  ['host case, default port and fragment in media URLs', base, withFields({ media: [
    { url: 'HTTPS://CDN.Example.com:443/front.jpg#main', role: 'primary', sortOrder: 0 },
    { url: 'https://cdn.example.com/back.jpg?w=800&h=600', role: 'gallery', sortOrder: 1 },
  ] }), true],
  ['media order by sortOrder, not by position', base, withFields({ media: [...(base.media as Payload[])].reverse() }), true],
  ['media with equal sortOrder are ordered by URL', withFields({ media: [{ url: 'https://x.example/b.jpg' }, { url: 'https://x.example/a.jpg' }] }),
    withFields({ media: [{ url: 'https://x.example/a.jpg' }, { url: 'https://x.example/b.jpg' }] }), true],
  ['media defaults (gallery, sortOrder 0)', withFields({ media: [{ url: 'https://x.example/a.jpg' }] }), withFields({ media: [{ url: 'https://x.example/a.jpg', role: 'gallery', sortOrder: 0 }] }), true],
  ['absent vs null', minimal, { ...minimal, sku: null, description: null, price: null, cost: null, weight: null, gtin13: null, ncm: null, category: null, brand: null, tags: null, metadata: null, media: null }, true],
  ['absent vs empty lists and empty metadata', minimal, { ...minimal, tags: [], media: [], metadata: {} }, true],
  ['blank description vs absent', minimal, { ...minimal, description: '   ' }, true],
  ['trackStock false vs absent', minimal, { ...minimal, trackStock: false }, true],
  // 10, 10.0 and 1e1 are the same JSON number once parsed, so the vectors are parsed JSON text.
  ['10 vs 10.0 vs 1e1', JSON.parse('{"externalSystem":"erp","externalId":"A","name":"n","price":10,"weight":1e1}'),
    JSON.parse('{"externalSystem":"erp","externalId":"A","name":"n","price":10.0,"weight":10.000}'), true],
  ['ncm with and without dots', base, withFields({ ncm: '6109.10.00' }), true],
  ['price change', base, withFields({ price: 19.91 }), false],
  ['name change', base, withFields({ name: 'Red T-shirt, size L' }), false],
  ['a tag added', base, withFields({ tags: ['cotton', 'summer', 'red'] }), false],
  ['media role change', base, withFields({ media: [
    { url: 'https://cdn.example.com/front.jpg', role: 'gallery', sortOrder: 0 },
    { url: 'https://cdn.example.com/back.jpg?w=800&h=600', role: 'gallery', sortOrder: 1 },
  ] }), false],
  ['media query value change', base, withFields({ media: [
    { url: 'https://cdn.example.com/front.jpg', role: 'primary', sortOrder: 0 },
    { url: 'https://cdn.example.com/back.jpg?w=801&h=600', role: 'gallery', sortOrder: 1 },
  ] }), false],
  ['trackStock change', base, withFields({ trackStock: false }), false],
  ['metadata value change', base, withFields({ metadata: { season: 'FW26', origin: 'PT' } }), false],
  ['metadata whitespace is kept', withFields({ metadata: { note: 'a' } }), withFields({ metadata: { note: ' a' } }), false],
  ['category change', base, withFields({ category: { name: 'Shirts' } }), false],
  // Names match case-insensitively: the case names the same stored category, so it is not content.
  ['category name case', base, withFields({ category: { name: 't-SHIRTS' } }), true],
  ['brand name case', withFields({ brand: { name: 'Acme' } }), withFields({ brand: { name: 'ACME' } }), true],
  ['description cleared', base, without('description'), false],
  ['0 vs null price', withFields({ price: 0 }), withFields({ price: null }), false],
];

function hashOf(payload: Payload): string {
  const result = normalizeItem(payload);
  assert.ok(result.ok, `expected a valid payload: ${JSON.stringify(!result.ok && result.details)}`);
  return result.item.contentHash;
}

for (const [name, a, b, same] of vectors) {
  test(`contentHash: ${name} → ${same ? 'same' : 'different'} hash`, () => {
    if (same) assert.equal(hashOf(a), hashOf(b));
    else assert.notEqual(hashOf(a), hashOf(b));
  });
}

test('the identity triple does not affect contentHash', () => {
  const h = hashOf(base);
  assert.equal(hashOf(withFields({ externalSystem: 'shop' })), h);
  assert.equal(hashOf(withFields({ externalId: 'SKU-9999' })), h);
});

test('contentHash is SHA-256 hex of the RFC 8785 form (checked against the canonicalize package)', () => {
  const result = normalizeItem(withFields({ metadata: { z: [1, 1.5, -0, 1e21, 'é', { b: null, a: true }], 'ä': 1, A: 2, '\u{1F600}': 3, '\uE000': 4, 10: 5, 9: 6 } }));
  assert.ok(result.ok);
  const item: NormalizedItem = result.item;
  const expected = canonicalize({
    sku: item.sku, name: item.name, description: item.description, price: item.price, cost: item.cost,
    weight: item.weight, gtin13: item.gtin13, ncm: item.ncm,
    category: item.category && { name: item.category.name.toLowerCase() }, brand: item.brand && { name: item.brand.name.toLowerCase() },
    tags: item.tags, metadata: item.metadata,
    media: item.media.map((m) => ({ url: m.normalizedUrl, role: m.role, sortOrder: m.sortOrder })),
    trackStock: item.trackStock,
  })!;
  assert.equal(hashInput(item), expected);
  assert.equal(canonicalJson(item.metadata), canonicalize(item.metadata));
  assert.equal(item.contentHash, createHash('sha256').update(expected).digest('hex'));
  assert.match(item.contentHash, /^[0-9a-f]{64}$/);
});
