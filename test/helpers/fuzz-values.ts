// Values for the contract fuzz test: fast-check arbitraries derived from the contract's JSON Schemas, both valid-ish and hostile.
import fc from 'fast-check';
import type { Arbitrary } from 'fast-check';

export interface Schema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
}

/** JSON text that `JSON.stringify` cannot produce (raw number literals, huge or deep shapes), built only when sent. */
export class RawJson {
  readonly label: string;
  readonly make: () => string;
  constructor(label: string, make: () => string) {
    this.label = label;
    this.make = make;
  }
}

/** An object written with repeated keys: `{"a":1,"a":2}`. */
export class DuplicateKeys {
  readonly entries: Array<[string, unknown]>;
  constructor(entries: Array<[string, unknown]>) {
    this.entries = entries;
  }
}

/** Serializes a generated value, honouring RawJson and DuplicateKeys anywhere inside it. */
export function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.make();
  if (value instanceof DuplicateKeys) return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : jsonText(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const parts = Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`);
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A short readable form for reports: raw parts by their label. */
export function describeValue(value: unknown): string {
  if (value instanceof RawJson) return `‹${value.label}›`;
  if (value instanceof DuplicateKeys) return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${describeValue(v)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map(describeValue).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${describeValue(v)}`).join(',')}}`;
  }
  if (typeof value === 'string' && value.length > 120) return `${JSON.stringify(value.slice(0, 40))}…(${value.length} chars)`;
  return JSON.stringify(value) ?? String(value);
}

// Characters that have broken services before: NUL (Postgres text refuses it), other C0/C1
// controls, separators JSON and JavaScript disagree on, BOM, non-characters, lone surrogates
// (not encodable as UTF-8, so Postgres refuses them too), bidi overrides and combining marks.
export const CONTROL_CHARS = ['\u0000', '\u0001', '\u0008', '\t', '\n', '\r', '\u000b', '\u001b', '\u001f', '\u007f', '\u0085', '\u009f'];
export const ODD_CHARS = ['\u00a0', '\u2028', '\u2029', '\ufeff', '\ufffe', '\uffff', '\u202e', '\u0301', '\u{1f600}', '\u{10ffff}', 'é', '%', '\\', '"', "'", '/', '?', '#', '&', '=', '+', '.', '..', ' '];
export const LONE_SURROGATES = ['\ud800', '\udbff', '\udc00', '\udfff'];

// NUL and lone surrogates weigh most: they are what Postgres refuses.
const hostileChar = fc.oneof(
  { weight: 3, arbitrary: fc.constant('\u0000') },
  { weight: 2, arbitrary: fc.constantFrom(...LONE_SURROGATES) },
  { weight: 2, arbitrary: fc.constantFrom(...CONTROL_CHARS) },
  { weight: 3, arbitrary: fc.constantFrom(...ODD_CHARS) },
);
/** Code points, as Ajv counts minLength/maxLength. */
const codePoints = (s: string) => [...s].length;

/** Text with at least one hostile character somewhere, cut to `max` code points. */
export function hostileText(min = 0, max = 64): Arbitrary<string> {
  return fc.tuple(fc.string({ maxLength: 8 }), fc.array(hostileChar, { minLength: 1, maxLength: 3 }), fc.string({ maxLength: 8 }))
    .map(([a, chars, b]) => {
      const text = [...`${a}${chars.join('')}${b}`].slice(0, max).join('');
      return codePoints(text) >= min ? text : text.padEnd(min, 'x');
    });
}

function textWithin(min: number, max: number): Arbitrary<string> {
  const cap = Math.min(max, 48);
  const fit = (s: string) => codePoints(s) >= min && codePoints(s) <= max;
  return fc.oneof(
    { weight: 6, arbitrary: fc.string({ minLength: Math.max(min, 1), maxLength: Math.max(cap, min, 1) }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: min, maxLength: cap }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: min, maxLength: cap }) },
    { weight: 3, arbitrary: hostileText(min, max) },
    // Lengths at the boundary the contract allows.
    { weight: 1, arbitrary: fc.constantFrom(...new Set([min, max].filter((n) => n < 100_000))).map((n) => 'x'.repeat(Math.max(n, min))) },
  ).filter(fit);
}

// Web addresses that fail fast and never leave the machine: `.invalid` names do not resolve.
const URLS = ['https://img.example.invalid/p/1.jpg', 'https://cdn.example.invalid/a.png?utm_source=x&b=2&a=1', 'HTTPS://HOOKS.EXAMPLE.INVALID/catalog', 'https://hooks.example.invalid/h?x=%00'];
// Addresses the network guard must refuse (400), and ones that stretch the parser.
const HOSTILE_URLS = [
  'http://127.0.0.1/', 'https://127.0.0.1:8080/x', 'https://[::1]/', 'https://169.254.169.254/latest/meta-data', 'https://0x7f000001/',
  'https://2130706433/', 'https://[::ffff:127.0.0.1]/', 'https://localhost/', 'https://user:pw@hooks.example.invalid/', 'https://ex ample.invalid/',
  'https://hooks.example.invalid:99999/', 'https://%FF.invalid/', 'ftp://files.example.invalid/', 'javascript:alert(1)', 'https://', 'https:///x',
  `https://hooks.example.invalid/${'a'.repeat(2020)}`, `https://hooks.example.invalid/${'a'.repeat(2100)}`, 'https://hooks.example.invalid/\u0000', 'https://xn--/',
];
const DATE_TIMES_ODD = [
  '0000-01-01T00:00:00Z', '0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999999999Z', '2016-12-31T23:59:60Z', '2024-02-29T00:00:00+23:59',
  '1969-12-31T23:59:59-00:00', '2024-01-01t00:00:00z', '2024-01-01 00:00:00Z', '1970-01-01T00:00:00.0000000000001Z',
];
// Outside the format, and outside what Postgres timestamps hold.
const DATE_TIMES_BAD = ['+300000-01-01T00:00:00Z', '300000-01-01T00:00:00Z', '-000001-01-01T00:00:00Z', '+275760-09-13T00:00:00.001Z', '2024-02-30T00:00:00Z', '2024-13-01T00:00:00Z', '2024-01-01', 'yesterday', '1e16', ''];
const UUID_ODD = ['00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', 'not-a-uuid', '123e4567-e89b-12d3-a456-42661417400', '123e4567-e89b-12d3-a456-4266141740000', '{123e4567-e89b-12d3-a456-426614174000}'];

/** Values of the wrong JSON type for any field. */
export const wrongType: Arbitrary<unknown> = fc.constantFrom(null, true, false, 0, 1, -1, 1.5, '', 'x', '0', 'null', [], [null], {}, { '': null }, ['x']);

/** JSON number literals JSON.stringify never writes: Infinity after parsing, -0, more digits than a double holds. */
const rawNumbers = fc.constantFrom('1e400', '-1e400', '-0', '1E+2', '1.0', '0.0000000000000000000001', '123456789012345678901234567890', '2147483648', '-2147483649', '9007199254740993', '1e16', '99999999999999999')
  .map((n) => new RawJson(n, () => n));

/** Huge or deep shapes, built when sent. */
export const hugeShape: Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(64, 1_000, 10_000, 100_000).map((d) => new RawJson(`array nested ${d} deep`, () => `${'['.repeat(d)}${']'.repeat(d)}`)),
  fc.constantFrom(64, 1_000, 10_000).map((d) => new RawJson(`object nested ${d} deep`, () => `${'{"a":'.repeat(d)}1${'}'.repeat(d)}`)),
  fc.constantFrom(1_001, 10_000, 100_000).map((n) => new RawJson(`array of ${n} numbers`, () => `[${'1,'.repeat(n - 1)}1]`)),
  fc.constantFrom(1_001, 10_000).map((n) => new RawJson(`array of ${n} strings with NUL`, () => `[${'"a\\u0000",'.repeat(n - 1)}"b"]`)),
  fc.constantFrom(10_000, 50_000).map((n) => new RawJson(`object with ${n} keys`, () => `{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}}`)),
  fc.constantFrom(257, 1_025, 100_000, 900_000).map((n) => new RawJson(`string of ${n} chars`, () => JSON.stringify('x'.repeat(n)))),
);

function numbersFor(schema: Schema, integer: boolean): Arbitrary<unknown> {
  const min = schema.minimum ?? (integer ? -(2 ** 53 - 1) : -1e9);
  const max = schema.maximum ?? (integer ? 2 ** 53 - 1 : 1e9);
  const edges = [min, max, min + 1, max - 1, 0, 1].filter((n) => n >= min && n <= max);
  const odd = integer ? [] : [-0, 0.01, 0.1 + 0.2, 123456789.123456789, 1e15, 9.99e15, 1e16, 1e21, Number.MAX_VALUE, Number.MIN_VALUE].filter((n) => n >= min && n <= max);
  const usual = integer
    ? fc.integer({ min: Math.max(min, -(2 ** 53 - 1)), max: Math.min(max, 2 ** 53 - 1) })
    : fc.double({ min: Math.max(min, -1e6), max: Math.min(max, 1e6), noNaN: true, noDefaultInfinity: true });
  return fc.oneof({ weight: 6, arbitrary: usual }, { weight: 3, arbitrary: fc.constantFrom(...edges, ...odd) });
}

/** Values outside the schema but of the same kind: one past each bound, wrong formats. */
export function outOfRange(schema: Schema): Arbitrary<unknown> {
  const types = new Set([schema.type ?? []].flat());
  const options: unknown[] = [];
  if (types.has('integer') || types.has('number')) {
    if (schema.minimum !== undefined) options.push(schema.minimum - 1, schema.minimum - 0.5);
    if (schema.maximum !== undefined) options.push(schema.maximum + 1, schema.maximum + 0.5);
    options.push(2 ** 31, -(2 ** 31) - 1, 2 ** 53, -1e308, 1e308, 1.5, -1);
  }
  if (types.has('string')) {
    if (schema.maxLength !== undefined && schema.maxLength < 100_000) options.push('y'.repeat(schema.maxLength + 1));
    if ((schema.minLength ?? 0) > 0) options.push('');
    if (schema.format === 'date-time') options.push(...DATE_TIMES_BAD);
    if (schema.format === 'uuid') options.push(...UUID_ODD);
    if (schema.format === 'uri') options.push(...HOSTILE_URLS);
    if (schema.format === 'email') options.push('a@b', 'no-at-sign', `${'x'.repeat(300)}@example.invalid`, 'a\u0000@example.invalid');
    if (schema.pattern) options.push('8471.3012', '8471.30.12', '84713012', '847130', '0000000000000', '000000000000a', 'abc', ' ', '-', ':');
    if (schema.enum) options.push(...schema.enum.map((v) => String(v).toUpperCase()), ' ', 'unknown');
  }
  if (types.has('array')) options.push([null], [{}], [[]]);
  const base = options.length > 0 ? fc.constantFrom(...options) : wrongType;
  return fc.oneof({ weight: 4, arbitrary: base }, { weight: 1, arbitrary: rawNumbers });
}

export interface ValueOptions {
  /** Chance per node, in percent, of replacing a value by a hostile one (0: leave valid). */
  mutation: number;
  /** Fixed choices for named properties (e.g. identities the test seeded), mixed with generated ones. */
  knownStrings?: Record<string, readonly string[]>;
  depth?: number;
}

/** Valid-ish values of `schema`; with `mutation` > 0 any node may become hostile. */
export function valueOf(schema: Schema, options: ValueOptions, name?: string): Arbitrary<unknown> {
  const valid = validValueOf(schema, options, name);
  if (options.mutation <= 0) return valid;
  return fc.oneof(
    { weight: 100 - options.mutation, arbitrary: valid },
    { weight: options.mutation, arbitrary: fc.oneof({ weight: 4, arbitrary: outOfRange(schema) }, { weight: 3, arbitrary: wrongType }, { weight: 1, arbitrary: hugeShape }) },
  );
}

function validValueOf(schema: Schema, options: ValueOptions, name?: string): Arbitrary<unknown> {
  const depth = options.depth ?? 0;
  const inner = { ...options, depth: depth + 1 };
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s) => valueOf(s, inner, name)));
  if (schema.allOf) return valueOf(Object.assign({}, ...schema.allOf) as Schema, inner, name);
  const types = [schema.type ?? 'string'].flat();
  if (types.length > 1) return fc.oneof(...types.map((type) => validValueOf({ ...schema, type }, options, name)));
  const known = name === undefined ? undefined : options.knownStrings?.[name];
  switch (types[0]) {
    case 'null': return fc.constant(null);
    case 'boolean': return fc.boolean();
    case 'integer': return numbersFor(schema, true);
    case 'number': return numbersFor(schema, false);
    case 'array': {
      const items = valueOf(schema.items ?? {}, inner);
      const constraints = { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, 4) };
      return schema.uniqueItems ? fc.uniqueArray(items, { ...constraints, selector: (v) => jsonText(v) }) : fc.array(items, constraints);
    }
    case 'object': {
      if (depth > 6) return fc.constant({});
      const properties = schema.properties ?? {};
      const model = Object.fromEntries(Object.entries(properties).map(([key, s]) => [key, valueOf(s, inner, key)]));
      const record = fc.record(model, { requiredKeys: (schema.required ?? []).filter((k) => k in properties) });
      if (schema.additionalProperties === false || Object.keys(properties).length > 0) return record;
      return fc.dictionary(textWithin(1, 16), valueOf({ type: ['string', 'number', 'boolean', 'null'] }, inner), { maxKeys: 4 });
    }
    default: {
      let strings: Arbitrary<string>;
      if (schema.format === 'date-time') {
        strings = fc.oneof(
          { weight: 5, arbitrary: fc.date({ min: new Date('1990-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()) },
          { weight: 1, arbitrary: fc.constantFrom(...DATE_TIMES_ODD) },
        );
      } else if (schema.format === 'uuid') strings = fc.uuid();
      else if (schema.format === 'uri') strings = fc.constantFrom(...URLS);
      else if (schema.format === 'email') strings = fc.constantFrom('owner@merchant.example', 'O.W+tag@sub.merchant.example');
      else if (schema.pattern) {
        const min = schema.minLength ?? 0;
        const max = schema.maxLength ?? 64;
        strings = fc.stringMatching(new RegExp(schema.pattern), { maxLength: max }).filter((s) => s.length >= min && s.length <= max);
      } else strings = textWithin(schema.minLength ?? 0, schema.maxLength ?? 200);
      return known && known.length > 0 ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known) }, { weight: 2, arbitrary: strings }) : strings;
    }
  }
}
