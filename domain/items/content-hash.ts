// contentHash: SHA-256 of the RFC 8785 canonical JSON of a normalized item without its identity.
import { hash } from 'node:crypto';
import type { NormalizedItem } from './normalized-item.ts';

/**
 * RFC 8785 (JCS) serialization: ECMAScript number and string forms (JSON.stringify), object keys sorted
 * by UTF-16 code units, no whitespace. Ours rather than the `canonicalize` package (checked against it in
 * the tests) because that one is slow enough to dominate the hashing of an item. Expects JSON values
 * with well-formed strings, which normalizeItem guarantees.
 */
export function canonicalJson(value: unknown): string {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('JCS cannot represent a non-finite number');
    return JSON.stringify(value);
  }
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + canonicalJson(value[i] ?? null);
    return `${out}]`;
  }
  const object = value as Record<string, unknown>;
  let out = '{';
  for (const key of Object.keys(object).sort()) {
    const v = object[key];
    if (v === undefined) continue;
    out += `${out.length === 1 ? '' : ','}${JSON.stringify(key)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

/**
 * contentHash: SHA-256 hex of the RFC 8785 canonical JSON of the normalized payload without the
 * identity triple (media by normalized URL). Expects an already normalized item.
 */
export function hashPayload(item: Omit<NormalizedItem, 'contentHash'>): string {
  return hash('sha256', hashInput(item), 'hex');
}

const str = JSON.stringify;
const nullable = (value: string | number | null) => (value === null ? 'null' : str(value));
// Categories and brands are matched case-insensitively, so the case of their name is not content:
// "TOYS" names the same stored category as "Toys", and an export re-imports unchanged.
const named = (value: { name: string } | null) => (value === null ? 'null' : `{"name":${str(value.name.toLowerCase())}}`);

/**
 * The canonical JSON that contentHash covers: equal to canonicalJson({ sku, name, description, price,
 * cost, weight, gtin13, ncm, category, brand, tags, metadata, media: [{ url: normalizedUrl, role,
 * sortOrder }], trackStock }) (a test checks it), written with the keys already in JCS order because
 * the generic walk costs a quarter of the per-item budget.
 */
export function hashInput(item: Omit<NormalizedItem, 'contentHash'>): string {
  let media = '';
  for (const m of item.media) {
    media += `${media === '' ? '' : ','}{"role":${str(m.role)},"sortOrder":${str(m.sortOrder)},"url":${str(m.normalizedUrl)}}`;
  }
  return `{"brand":${named(item.brand)},"category":${named(item.category)},"cost":${nullable(item.cost)}`
    + `,"description":${nullable(item.description)},"gtin13":${nullable(item.gtin13)},"media":[${media}]`
    + `,"metadata":${item.metadata === null ? 'null' : canonicalJson(item.metadata)},"name":${str(item.name)}`
    + `,"ncm":${nullable(item.ncm)},"price":${nullable(item.price)},"sku":${nullable(item.sku)}`
    + `,"tags":${str(item.tags)},"trackStock":${item.trackStock},"weight":${nullable(item.weight)}}`;
}
