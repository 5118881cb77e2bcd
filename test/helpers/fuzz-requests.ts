// Requests for the contract fuzz test: every operation of openapi.yaml, its parameters and body, generated with fast-check.
import fc from 'fast-check';
import type { Arbitrary } from 'fast-check';
import { API_PREFIX } from '../../platform/http/contract.ts';
import { DuplicateKeys, hostileText, hugeShape, jsonText, outOfRange, RawJson, valueOf, wrongType } from './fuzz-values.ts';
import type { Schema } from './fuzz-values.ts';

export type AuthKind = 'full' | 'read' | 'none' | 'bogus' | 'malformed';

export interface FuzzRequest {
  /** operationId, or `unrouted` for paths the contract does not name. */
  operation: string;
  method: string;
  /** Path and query; `{{name}}` marks a value the test seeded (job, webhook, delivery, upload address). */
  target: string;
  auth: AuthKind;
  headers: Record<string, string>;
  body?: { text: string } | { raw: RawJson } | { bytes: number[]; label: string };
}

export interface ContractOperationInfo {
  operationId: string;
  method: string;
  path: string;
  outside: boolean;
  parameters: Array<{ name: string; in: string; required?: boolean; schema: Schema }>;
  body?: { contentType: string; schema: Schema };
}

interface Definition {
  paths: Record<string, Record<string, unknown> & { parameters?: ContractOperationInfo['parameters']; servers?: unknown[] }>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Every operation of the (dereferenced) contract, path-level parameters merged in. */
export function contractOperations(definition: unknown): ContractOperationInfo[] {
  const operations: ContractOperationInfo[] = [];
  for (const [path, item] of Object.entries((definition as Definition).paths)) {
    for (const method of METHODS) {
      const op = item[method] as { operationId: string; parameters?: ContractOperationInfo['parameters']; servers?: unknown[]; requestBody?: { content: Record<string, { schema: Schema }> } } | undefined;
      if (!op) continue;
      const content = Object.entries(op.requestBody?.content ?? {})[0];
      operations.push({
        operationId: op.operationId,
        method: method.toUpperCase(),
        path,
        outside: Boolean(item.servers ?? op.servers),
        parameters: [...(item.parameters ?? []), ...(op.parameters ?? [])],
        ...(content ? { body: { contentType: content[0], schema: content[1].schema } } : {}),
      });
    }
  }
  return operations;
}

/** What the test seeded: identities in paths and bodies, and placeholders for ids the service chose. */
export interface Seeds {
  externalSystems: readonly string[];
  externalIds: readonly string[];
  /** Items a DELETE may remove without starving the other operations of existing items. */
  spareExternalIds: readonly string[];
}

const PLACEHOLDERS: Record<string, string> = { jobId: '{{jobId}}', id: '{{webhookId}}', deliveryId: '{{deliveryId}}', storagePath: '{{storagePath}}', expires: '{{expires}}', signature: '{{signature}}' };

/** Percent-encodes the UTF-8 bytes of `value` (a lone surrogate becomes U+FFFD, as any client sends it). */
export function encodeComponent(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const asText = (v: unknown) => (typeof v === 'string' ? v : v instanceof RawJson ? v.label : JSON.stringify(v) ?? String(v));

// Escapes a parser must survive: bytes that are not UTF-8, cut sequences, a lone `%`, encoded
// NUL, slash and dot segments, overlong forms.
const MALFORMED = ['%FF', '%E0%A4', '%', '%%', '%zz', '%C0%AF', '%ED%A0%80', '%00', 'a%00b', '%2F', '%2e%2e', '%F0%9F%98', '%C3', '%0D%0A', '%u0041'];
const malformed = fc.constantFrom(...MALFORMED);

function pathValue(param: ContractOperationInfo['parameters'][number], seeds: Seeds, spare: boolean): Arbitrary<string> {
  const placeholder = spare && param.name === 'id' ? '{{spareWebhookId}}' : PLACEHOLDERS[param.name];
  const known = param.name === 'externalSystem' ? seeds.externalSystems : param.name === 'externalId' ? (spare ? seeds.spareExternalIds : seeds.externalIds) : [];
  const choices: Array<{ weight: number; arbitrary: Arbitrary<string> }> = [
    { weight: 3, arbitrary: valueOf(param.schema, { mutation: 0 }).map((v) => encodeComponent(asText(v))) },
    { weight: 2, arbitrary: fc.oneof(outOfRange(param.schema), hostileText(), wrongType).map((v) => encodeComponent(asText(v))) },
    { weight: 1, arbitrary: malformed },
  ];
  if (placeholder) choices.push({ weight: 6, arbitrary: fc.constant(placeholder) });
  if (known.length > 0) choices.push({ weight: 6, arbitrary: fc.constantFrom(...known).map(encodeComponent) });
  return fc.oneof(...choices);
}

function queryPart(param: ContractOperationInfo['parameters'][number]): Arbitrary<string | undefined> {
  const placeholder = PLACEHOLDERS[param.name];
  const name = encodeComponent(param.name);
  const valid = valueOf(param.schema, { mutation: 0 }).map((v) => `${name}=${encodeComponent(asText(v))}`);
  const choices: Array<{ weight: number; arbitrary: Arbitrary<string | undefined> }> = [
    { weight: param.required ? 1 : 5, arbitrary: fc.constant(undefined) },
    { weight: 3, arbitrary: valid },
    { weight: 2, arbitrary: fc.oneof(outOfRange(param.schema), hostileText(), wrongType).map((v) => `${name}=${encodeComponent(asText(v))}`) },
    { weight: 1, arbitrary: malformed.map((m) => `${name}=${m}`) },
    { weight: 1, arbitrary: fc.tuple(valid, valid).map(([a, b]) => `${a}&${b}`) },
    { weight: 1, arbitrary: fc.constantFrom(`${name}=`, name, `${name}[]=1`, `${name}[a]=1`) },
  ];
  if (placeholder) choices.push({ weight: 6, arbitrary: fc.constant(`${name}=${placeholder}`) });
  return fc.oneof(...choices);
}

const extraQuery = fc.oneof(
  { weight: 12, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom('zz=1', '__proto__=x', 'constructor=x', '%FF=1', '&&', '=', 'a=%', `q=${'x'.repeat(8000)}`) },
);

const CONTENT_TYPES = [
  'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/merge-patch+json', 'application/json; charset=latin1', 'application/json; charset="utf-8"',
  'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/x-ndjson', 'application/octet-stream', ';', 'application/',
];

function requestId(): Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9._:-]{8,128}$/) },
    // 1–7 characters: the contract allows them (1–128).
    { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9._:-]{1,7}$/) },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', 'x'.repeat(129), 'x'.repeat(5000), 'has space here', 'slash/slash/1', 'caf\u00e9-\u00e9t\u00e9-12', '<script>1</script>') },
  );
}

function idempotencyKey(declared: boolean): Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: declared ? 4 : 20, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9-]{1,40}$/) },
    { weight: 1, arbitrary: fc.constantFrom('fz-fixed-key-1', 'fz-fixed-key-2') },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', 'x'.repeat(255), 'x'.repeat(256), 'x'.repeat(10_000), 'caf\u00e9\u00ff\u0080', 'tab\there') },
  );
}

const INVALID_UTF8: Array<[string, number[]]> = [
  ['0xFF byte', [0xff]], ['0xFE 0xFF', [0xfe, 0xff]], ['cut 3-byte sequence', [0xe0, 0xa4]], ['overlong slash', [0xc0, 0xaf]],
  ['UTF-8 of a surrogate', [0xed, 0xa0, 0x80]], ['5-byte lead', [0xf8, 0x88, 0x80, 0x80, 0x80]], ['lone continuation', [0x80]], ['NUL byte', [0x00]],
];

function bodyFor(op: ContractOperationInfo, seeds: Seeds): Arbitrary<FuzzRequest['body']> {
  const schema = op.body!.schema;
  const knownStrings = { externalSystem: seeds.externalSystems, externalId: seeds.externalIds };
  const valid = valueOf(schema, { mutation: 0, knownStrings });
  const mutated = valueOf(schema, { mutation: 6, knownStrings });
  const json = (v: unknown) => ({ text: jsonText(v) });
  const duplicated = valid.chain((v) => {
    const entries = v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.entries(v) : [];
    if (entries.length === 0) return fc.constant({ text: '{"a":1,"a":2}' });
    return fc.tuple(fc.constantFrom(...entries), fc.oneof(wrongType, hostileText()))
      .map(([[key], second]) => json(new DuplicateKeys([...entries, [key, second]])));
  });
  const raw = fc.constantFrom('', ' ', 'null', 'true', '0', '"str"', '[]', '{', '{"a":', '{"a":1}}', '\ufeff{}', '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"x":1}}}', '{}', '[{}]', 'NaN', '{"a":1e400}', '\u0000')
    .map((text) => ({ text }));
  const badBytes = fc.tuple(valid, fc.constantFrom(...INVALID_UTF8)).map(([v, [label, bytes]]) => {
    const text = jsonText(v);
    const cut = text.lastIndexOf('"') > 0 ? text.lastIndexOf('"') : text.length;
    return { bytes: [...Buffer.from(text.slice(0, cut)), ...bytes, ...Buffer.from(text.slice(cut))], label: `JSON with ${label}` };
  });
  const utf16 = valid.map((v) => ({ bytes: [...Buffer.from(jsonText(v), 'utf16le')], label: 'JSON in UTF-16' }));
  const huge = fc.oneof(
    hugeShape.map((shape) => ({ raw: shape as RawJson })),
    hugeShape.map((shape) => json({ items: shape, name: shape, metadata: shape })),
  );
  if (op.body!.contentType === 'application/x-ndjson') {
    // An import file: item lines, some broken, with the file's own rules (LF, UTF-8, no array).
    const line = fc.oneof(valueOf(op.body!.schema.type ? op.body!.schema : {}, { mutation: 0 }), mutated).map(jsonText);
    return fc.oneof(
      fc.array(fc.oneof(line, fc.constantFrom('', '[', '{"externalId":"\\u0000"}', '{"externalId":"\\ud800","externalSystem":"x","name":"n"}')), { maxLength: 5 }).map((lines) => ({ text: lines.join('\n') })),
      badBytes,
    );
  }
  return fc.oneof(
    { weight: 4, arbitrary: valid.map(json) },
    { weight: 5, arbitrary: mutated.map(json) },
    { weight: 1, arbitrary: duplicated },
    { weight: 1, arbitrary: raw },
    { weight: 1, arbitrary: fc.oneof(badBytes, utf16) },
    { weight: 1, arbitrary: huge },
  );
}

function operationRequest(op: ContractOperationInfo, seeds: Seeds): Arbitrary<FuzzRequest> {
  const spare = op.method === 'DELETE';
  const pathParams = op.parameters.filter((p) => p.in === 'path');
  const queryParams = op.parameters.filter((p) => p.in === 'query');
  const declaresIdempotency = op.parameters.some((p) => p.in === 'header' && p.name === 'Idempotency-Key');
  const otherMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => m !== op.method);
  return fc.record({
    method: fc.oneof({ weight: 19, arbitrary: fc.constant(op.method) }, { weight: 1, arbitrary: fc.constantFrom(...otherMethods) }),
    path: fc.tuple(...pathParams.map((p) => pathValue(p, seeds, spare))).map((values) => {
      let path = op.path;
      pathParams.forEach((p, i) => { path = path.replace(`{${p.name}}`, values[i]!); });
      return path;
    }),
    query: fc.tuple(...queryParams.map(queryPart), extraQuery).map((parts) => parts.filter((p) => p !== undefined).join('&')),
    auth: fc.constantFrom<AuthKind>(...(Array(84).fill('full') as AuthKind[]), ...(Array(5).fill('read') as AuthKind[]), 'none', 'none', 'none', 'none', 'bogus', 'bogus', 'bogus', 'bogus', 'malformed', 'malformed', 'malformed'),
    requestId: requestId(),
    idempotencyKey: idempotencyKey(declaresIdempotency),
    contentType: fc.oneof({ weight: 17, arbitrary: fc.constant(op.body?.contentType ?? 'application/json') }, { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) }, { weight: 1, arbitrary: fc.constant(undefined) }),
    body: op.body ? bodyFor(op, seeds) : fc.oneof({ weight: 19, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constant({ text: '{"unexpected":true}' }) }),
  }).map((r) => {
    const headers: Record<string, string> = {};
    if (r.requestId !== undefined) headers['x-request-id'] = r.requestId;
    if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey;
    if (r.body !== undefined && r.contentType !== undefined) headers['content-type'] = r.contentType;
    const prefix = op.outside ? '' : API_PREFIX;
    return {
      operation: op.operationId,
      method: r.method,
      target: `${prefix}${r.path}${r.query === '' ? '' : `?${r.query}`}`,
      auth: r.auth,
      headers,
      ...(r.body === undefined || r.method === 'GET' ? {} : { body: r.body }),
    };
  });
}

// Paths no operation names: operational routes under the API prefix, near-misses and traversal.
const UNROUTED = [
  `${API_PREFIX}/healthz`, `${API_PREFIX}/readyz`, `${API_PREFIX}/metrics`, `${API_PREFIX}/docs`, `${API_PREFIX}/docs/assets/docs.js`, `${API_PREFIX}/storage/v1/upload/x`,
  API_PREFIX, `${API_PREFIX}/`, `${API_PREFIX}/items/`, `${API_PREFIX}/items//A-1`, `${API_PREFIX}/items/a/b/c/d/e`, `${API_PREFIX}/%FF`, `${API_PREFIX}/items/%`,
  `${API_PREFIX}/ITEMS`, `${API_PREFIX}/items/upsert/`, `${API_PREFIX}/imports/00000000-0000-0000-0000-000000000000/unknown`, `${API_PREFIX}/openapi.json/x`,
  `${API_PREFIX}/webhooks/%2e%2e/items`, '/', '/api', '/api/v1', '/favicon.ico', '/docs/assets/%2e%2e/%2e%2e/package.json', '/docs/assets/..%2F..%2Fpackage.json',
  '/healthz/', '/healthz?x=%FF', '/metrics?%', '/docs/', '/docs/assets/', '/docs/assets/swagger-ui.css', '/storage/v1/upload/', '/storage/v1/upload/%00', '/%00', '/%',
];

const unrouted: Arbitrary<FuzzRequest> = fc.record({
  target: fc.constantFrom(...UNROUTED),
  method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
  auth: fc.constantFrom<AuthKind>('full', 'full', 'none', 'bogus'),
  requestId: requestId(),
}).map((r): FuzzRequest => ({
  operation: 'unrouted', method: r.method, target: r.target, auth: r.auth,
  headers: r.requestId === undefined ? {} : { 'x-request-id': r.requestId },
}));

/** One request at a time of any operation; operations with a body weigh more, having more to vary. */
export function fuzzRequests(operations: ContractOperationInfo[], seeds: Seeds): Arbitrary<FuzzRequest> {
  return fc.oneof(
    ...operations.map((op) => ({ weight: op.body ? 3 : 1, arbitrary: operationRequest(op, seeds) })),
    { weight: 3, arbitrary: unrouted },
  );
}
