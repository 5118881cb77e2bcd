// The one validator and normalizer of an item payload (single upsert, bulk element, import line).
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import { parse } from 'yaml';
import type { ItemPayload, MediaRole } from '../../generated/client.ts';
import { unstorableTexts } from '../../platform/db/storable-text.ts';
import type { ErrorDetail } from '../../platform/errors.ts';
import { hashNormalizedUrl, normalizeMediaUrl } from '../media/source-url.ts';
import { hashPayload } from './content-hash.ts';
import type { NormalizedItem, NormalizedMedia, NormalizeResult } from './normalized-item.ts';
import { PATTERN_MESSAGES, ajvDetail } from './payload-errors.ts';

const addFormats = formats.default;
// Read directly rather than through platform/http/contract.ts: domain code must not load the HTTP stack.
const CONTRACT_URL = new URL('../../openapi.yaml', import.meta.url);

type Json = Record<string, unknown>;

const METADATA_MAX_BYTES = 16 * 1024; // metadata ≤ 16 KB serialized (the contract's ItemPayload)
// Far more than one payload's fields can produce; bounds the walk over a hostile one.
const MAX_TEXT_PROBLEMS = 100;
const MAX_DECIMALS = 4; // price and cost have at most 4 decimals (docs/rest-api.md, "Payload rules")
const TEXT_FIELDS = ['externalSystem', 'externalId', 'sku', 'name', 'description', 'gtin13', 'ncm'] as const;

let validator: ValidateFunction | undefined;

// Compiled once, on first use, from the contract itself so that the schema has one source.
function itemPayloadValidator(): ValidateFunction {
  if (validator) return validator;
  const document = parse(readFileSync(CONTRACT_URL, 'utf8')) as { components: { schemas: Json } };
  const ajv = new Ajv2020({ allErrors: true, strict: false, strictNumbers: true });
  addFormats(ajv);
  validator = ajv.compile({
    $id: 'urn:catalog-service:item-payload',
    $ref: '#/components/schemas/ItemPayload',
    components: { schemas: document.components.schemas },
  });
  return validator;
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: string) => value.trim().normalize('NFC');

/** Trims and NFC-normalizes text the way the payload does; for identity path parameters too. */
export const normalizeText = text;

// Strings are trimmed and NFC-normalized before the schema runs, so that length limits apply to the
// value that is stored. The input is never mutated.
function prepare(input: Json): Json {
  const out: Json = { ...input };
  for (const field of TEXT_FIELDS) {
    const value = out[field];
    if (typeof value === 'string') out[field] = text(value);
  }
  if (out.description === '') out.description = null; // an empty description is no description
  for (const field of ['category', 'brand']) {
    const value = out[field];
    if (isObject(value) && typeof value.name === 'string') out[field] = { ...value, name: text(value.name) };
  }
  if (Array.isArray(out.tags)) out.tags = out.tags.map((t: unknown) => (typeof t === 'string' ? text(t) : t));
  if (Array.isArray(out.media)) {
    out.media = out.media.map((m: unknown) => (isObject(m) && typeof m.url === 'string' ? { ...m, url: m.url.trim() } : m));
  }
  return out;
}

/** Number of decimal places of the shortest round-trip form of n (19.99 → 2, 1e-7 → 7). */
function decimalPlaces(n: number): number {
  const match = /^-?\d+(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(n));
  if (!match) return 0;
  return Math.max(0, (match[1]?.length ?? 0) - Number(match[2] ?? 0));
}

/** GS1 mod-10: weights 1,3,1,3… over the first 12 digits. */
function validGtin13(gtin: string): boolean {
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += (gtin.charCodeAt(i) - 48) * (i % 2 === 0 ? 1 : 3);
  return (10 - (sum % 10)) % 10 === gtin.charCodeAt(12) - 48;
}

// Sort by Unicode code point (plain `<` compares UTF-16 code units, which differs above U+FFFF).
function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    if (a.charCodeAt(i) !== b.charCodeAt(i)) return a.codePointAt(i)! - b.codePointAt(i)!;
  }
  return a.length - b.length;
}

// Metadata is free-form: keys and strings are NFC-normalized but not trimmed. Two keys that become equal
// under NFC would silently lose a value, so they are an error.
function normalizeJson(value: unknown, path: string, details: ErrorDetail[]): unknown {
  if (typeof value === 'string') return value.normalize('NFC');
  if (Array.isArray(value)) return value.map((v, i) => normalizeJson(v, `${path}.${i}`, details));
  if (typeof value !== 'object' || value === null) return value;
  const seen = new Set<string>();
  const entries: Array<[string, unknown]> = [];
  for (const [key, v] of Object.entries(value)) {
    const name = key.normalize('NFC');
    if (seen.has(name)) details.push({ path: `${path}.${name}`, message: 'is the same key as another one after Unicode normalization' });
    seen.add(name);
    entries.push([name, normalizeJson(v, `${path}.${name}`, details)]);
  }
  return Object.fromEntries(entries); // fromEntries keeps a "__proto__" key as data, never as a prototype
}

function checkMetadata(metadata: Json, base: string, details: ErrorDetail[]): Json | null {
  let serialized: string;
  try {
    serialized = JSON.stringify(metadata);
  } catch {
    details.push({ path: `${base}metadata`, message: 'must be plain JSON' });
    return null;
  }
  if (Buffer.byteLength(serialized, 'utf8') > METADATA_MAX_BYTES) {
    details.push({ path: `${base}metadata`, message: `must be at most ${METADATA_MAX_BYTES} bytes as JSON` });
    return null;
  }
  const normalized = normalizeJson(metadata, `${base}metadata`, details) as Json;
  return Object.keys(normalized).length === 0 ? null : normalized;
}

function checkMedia(media: readonly Json[], base: string, details: ErrorDetail[]): NormalizedMedia[] {
  const out: NormalizedMedia[] = [];
  const firstIndexOf = new Map<string, number>();
  let primaryAt = -1;
  media.forEach((entry, i) => {
    // Entries the schema refused are reported by it; the rules below apply to the others.
    if (!isObject(entry) || typeof entry.url !== 'string') return;
    const url = entry.url;
    let normalizedUrl: string;
    try {
      normalizedUrl = normalizeMediaUrl(url);
    } catch {
      details.push({ path: `${base}media.${i}.url`, message: PATTERN_MESSAGES.url! });
      return;
    }
    const role = (entry.role as MediaRole | undefined) ?? 'gallery';
    if (role === 'primary') {
      if (primaryAt >= 0) details.push({ path: `${base}media.${i}.role`, message: `must not be primary: media.${primaryAt} already is (at most one primary)` });
      else primaryAt = i;
    }
    const first = firstIndexOf.get(normalizedUrl);
    if (first !== undefined) details.push({ path: `${base}media.${i}.url`, message: `is the same image as media.${first}.url` });
    else firstIndexOf.set(normalizedUrl, i);
    // The schema reports a sortOrder of another type; here it must not reach the sort below,
    // which would turn a deeply nested array into text and overflow the stack.
    const sortOrder = typeof entry.sortOrder === 'number' ? entry.sortOrder : 0;
    out.push({ url, normalizedUrl, sourceUrlHash: hashNormalizedUrl(normalizedUrl), role, sortOrder: sortOrder === 0 ? 0 : sortOrder });
  });
  return out.sort((a, b) => a.sortOrder - b.sortOrder || (a.normalizedUrl < b.normalizedUrl ? -1 : a.normalizedUrl > b.normalizedUrl ? 1 : 0));
}

// Rules the schema cannot say (docs/rest-api.md, "Payload rules"). Each applies to a field of the type it expects, so that a
// payload the schema refused is told about these too, in the same answer.
function checkRules(p: Json, base: string, details: ErrorDetail[]) {
  for (const field of ['price', 'cost', 'weight'] as const) {
    const value = p[field];
    if (typeof value !== 'number') continue;
    if (!Number.isFinite(value)) details.push({ path: base + field, message: 'must be a finite number' });
    else if (field !== 'weight' && decimalPlaces(value) > MAX_DECIMALS) {
      details.push({ path: base + field, message: `must have at most ${MAX_DECIMALS} decimal places` });
    }
  }
  if (typeof p.gtin13 === 'string' && /^[0-9]{13}$/.test(p.gtin13) && !validGtin13(p.gtin13)) {
    details.push({ path: `${base}gtin13`, message: 'must have a valid GTIN-13 check digit' });
  }
}

const failure = (details: ErrorDetail[], externalId: string | undefined): NormalizeResult => {
  const seen = new Set<string>();
  // A URL can fail both `format` and `pattern` with the same message; say each complaint once.
  const unique = details.filter((d) => !seen.has(`${d.path}\0${d.message}`) && seen.add(`${d.path}\0${d.message}`));
  return externalId === undefined ? { ok: false, details: unique } : { ok: false, details: unique, externalId };
};

/**
 * Validates an item payload against the contract's ItemPayload and the service's rules, and
 * normalizes it. Detail paths are prefixed with pathPrefix (`items.7` or `items.7.` give `items.7.sku`).
 */
export function normalizeItem(input: unknown, pathPrefix = ''): NormalizeResult {
  const base = pathPrefix === '' || pathPrefix.endsWith('.') ? pathPrefix : `${pathPrefix}.`;
  const prepared = isObject(input) ? prepare(input) : input;
  const externalId = isObject(prepared) && typeof prepared.externalId === 'string' && prepared.externalId !== ''
    ? prepared.externalId
    : undefined;
  // Every error at once: what Postgres could not store, the schema's complaints, the service's rules.
  const details: ErrorDetail[] = unstorableTexts(input, base.replace(/\.$/, ''), MAX_TEXT_PROBLEMS);
  const validate = itemPayloadValidator();
  const schemaValid = validate(prepared);
  if (!schemaValid) {
    for (const error of validate.errors ?? []) {
      const detail = ajvDetail(error, base);
      if (detail) details.push(detail);
    }
  }
  if (!isObject(prepared)) return failure(details, undefined);
  checkRules(prepared, base, details);
  const metadata = isObject(prepared.metadata) ? checkMetadata(prepared.metadata, base, details) : null;
  const media = Array.isArray(prepared.media) ? checkMedia(prepared.media as Json[], base, details) : [];
  if (!schemaValid || details.length > 0) return failure(details, externalId);
  const p = prepared as ItemPayload;

  const number = (value: number | null | undefined) => (value === undefined || value === null ? null : value === 0 ? 0 : value);
  const item: Omit<NormalizedItem, 'contentHash'> = {
    externalSystem: p.externalSystem,
    externalId: p.externalId,
    sku: p.sku ?? null,
    name: p.name,
    description: p.description ?? null,
    price: number(p.price),
    cost: number(p.cost),
    weight: number(p.weight),
    gtin13: p.gtin13 ?? null,
    ncm: p.ncm == null ? null : p.ncm.replaceAll('.', ''),
    category: p.category ? { name: p.category.name } : null,
    brand: p.brand ? { name: p.brand.name } : null,
    tags: p.tags ? [...new Set(p.tags)].sort(compareCodePoints) : [],
    metadata,
    media,
    trackStock: p.trackStock ?? false,
  };
  return { ok: true, item: { ...item, contentHash: hashPayload(item) } };
}
