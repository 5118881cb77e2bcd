// Loads openapi.yaml (and asyncapi.yaml, served beside it) once and builds the openapi-backend router/validator for OpenAPI 3.1.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, Options as AjvOptions } from 'ajv';
import formats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { OpenAPIBackend, OpenAPIValidator } from 'openapi-backend';
import type { Document, Operation, Request, ValidationResult } from 'openapi-backend';
import { parse } from 'yaml';
import { storableTimestamp } from '../db/storable-time.ts';

const addFormats = formats.default;

export const API_PREFIX = '/api/v1/catalog';
export const CONTRACT_PATH = fileURLToPath(new URL('../../openapi.yaml', import.meta.url));
export const ASYNCAPI_PATH = fileURLToPath(new URL('../../asyncapi.yaml', import.meta.url));

export type ContractOperation = Operation<Document>;

export interface Contract {
  /** The document as parsed from openapi.yaml (served at /openapi.json through servedDocument). */
  document: Document;
  /** asyncapi.yaml as parsed, served at /asyncapi.json through servedAsyncApi. */
  asyncApi: object;
  /** Router and validator for the operations under the API prefix. */
  backend: OpenAPIBackend;
  /** Operations served outside the prefix (health, metrics, docs, the signed upload). */
  outsideOperations: ContractOperation[];
  /**
   * Validates a request with work bounded by its size: every error of a small request, the first
   * error only of a large one (`bodyBytes` over FULL_REPORT_BYTES), whose every wrong element
   * would otherwise become an error object of its own.
   */
  validateRequest(request: Request, operation: ContractOperation, bodyBytes: number, ignore?: (error: ErrorObject) => boolean): ValidationResult;
}

/** Requests up to this size get every validation error at once; larger ones stop at the first. */
export const FULL_REPORT_BYTES = 64 * 1024;

// openapi-backend builds draft-07 Ajv instances; the contract is JSON Schema 2020-12.
// Keep the formats it registered (int32, int64, float, double, byte, binary, password).
function ajv2020(original: { formats: Record<string, unknown> }, options: AjvOptions, allErrors: boolean) {
  const ajv = new Ajv2020({ ...options, allErrors, strict: false });
  addFormats(ajv);
  for (const [name, format] of Object.entries(original.formats)) {
    if (!(name in ajv.formats)) ajv.addFormat(name, format as never);
  }
  // Every date-time a request carries ends up in a timestamptz column or comparison.
  const rfc3339 = fullFormats['date-time'] as { validate: (value: string) => boolean };
  ajv.addFormat('date-time', { type: 'string', validate: (value: string) => rfc3339.validate(value) && storableTimestamp(value) });
  return ajv;
}

/** Operations whose path item names servers of its own live outside the API prefix. */
function outsidePrefix(document: Document): (operation: ContractOperation) => boolean {
  return (operation) => {
    const item = document.paths?.[operation.path] as { servers?: unknown[] } | undefined;
    return (operation.servers ?? item?.servers ?? []).length > 0;
  };
}

/** The deployment that serves the contract: its own base address, and the other one's when known. */
export interface Deployment {
  readonly environment: 'production' | 'staging';
  readonly publicBaseUrl: string;
  readonly otherEnvironmentUrl: string | undefined;
}

/**
 * The contract as served by a deployment: its server lists name that deployment (and the other
 * one, when configured) in place of the file's example addresses, after a relative server, which
 * a reader of the document (Swagger UI's "Try it out" at /docs, a generator given the served URL)
 * resolves against the address it read the document from, whatever host and port that is.
 * Paths outside the prefix list this deployment's origin first: generators join a path's first
 * server and the path as they are, and `/` + `/storage/…` is the host-less `//storage/…`.
 */
export function servedDocument(document: Document, deployment: Deployment): string {
  const other = deployment.environment === 'production' ? 'staging' : 'production';
  const here = (under: string) => ({ url: under === '' ? '/' : under, description: 'This service, at the address this document was read from' });
  const own = (under: string) => ({ url: `${deployment.publicBaseUrl}${under}`, description: `This deployment (${deployment.environment})` });
  const others = (under: string) => deployment.otherEnvironmentUrl
    ? [{ url: `${deployment.otherEnvironmentUrl}${under}`, description: `The ${other} deployment` }]
    : [];
  const served = structuredClone(document) as Document & { servers?: unknown[] };
  served.servers = [here(API_PREFIX), own(API_PREFIX), ...others(API_PREFIX)];
  for (const item of Object.values(served.paths ?? {}) as Array<{ servers?: unknown[] } | undefined>) {
    if (item?.servers) item.servers = [own(''), here(''), ...others('')];
  }
  return JSON.stringify(served);
}

/**
 * `x-read-replica: true` marks a read whose answer may lag the latest writes (platform/db/read-replica.ts).
 * A standby refuses writes, and a marked read that loses the replica runs again on the primary:
 * only a GET may carry it. A mistake here stops the start rather than a request.
 */
export function checkReplicaReads(operations: ContractOperation[]): void {
  for (const operation of operations) {
    const mark = (operation as { 'x-read-replica'?: unknown })['x-read-replica'];
    if (mark === undefined) continue;
    if (mark !== true || operation.method !== 'get') {
      throw new Error(`the contract marks ${operation.operationId ?? operation.path} with x-read-replica: ${JSON.stringify(mark)}; only \`true\` on a GET is allowed`);
    }
  }
}

export async function loadContract(path = CONTRACT_PATH, asyncApiPath = ASYNCAPI_PATH): Promise<Contract> {
  const document = parse(readFileSync(path, 'utf8')) as Document;
  const backend = new OpenAPIBackend({
    // A copy (openapi-backend dereferences in place; the served document keeps its $refs).
    definition: structuredClone(document),
    apiRoot: API_PREFIX,
    // openapi-backend checks documents against the 3.0 schema; Redocly lints the 3.1 contract instead.
    quick: true,
    validate: true,
    coerceTypes: true,
    customizeAjv: (original, options) => ajv2020(original as never, options, true) as never,
  });
  await backend.init();
  // The router rebuilds its flat list of operations (with lodash) on every match and validation;
  // the document no longer changes after init, so build it once. Operations served outside the
  // prefix are left out: under it, `/healthz` is an unknown route, not a handler-less match.
  const operations = backend.router.getOperations();
  checkReplicaReads(operations);
  const isOutside = outsidePrefix(document);
  const outsideOperations = operations.filter(isOutside);
  const prefixed = operations.filter((operation) => !isOutside(operation));
  backend.router.getOperations = () => prefixed;
  // The same router and schemas, stopping at the first error: bounded work for any body.
  const firstError = new OpenAPIValidator({
    definition: backend.definition,
    router: backend.router,
    lazyCompileValidators: true,
    coerceTypes: true,
    customizeAjv: (original, options) => ajv2020(original as never, options, false) as never,
  });
  // `ignore` drops errors the caller checks otherwise, before deciding whether to look for more.
  const validateRequest = (request: Request, operation: ContractOperation, bodyBytes: number, ignore?: (error: ErrorObject) => boolean): ValidationResult => {
    const kept = (result: ValidationResult): ValidationResult => {
      if (!ignore || result.valid) return result;
      const errors = (result.errors ?? []).filter((error) => !ignore(error));
      return { ...result, valid: errors.length === 0, errors };
    };
    const quick = kept(firstError.validateRequest(request, operation));
    if (quick.valid || bodyBytes > FULL_REPORT_BYTES) return quick;
    return kept(backend.validateRequest(request, operation));
  };
  return { document, asyncApi: parse(readFileSync(asyncApiPath, 'utf8')) as object, backend, outsideOperations, validateRequest };
}
