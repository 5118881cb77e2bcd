// Loads openapi.yaml once and builds the openapi-backend router/validator for OpenAPI 3.1.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Options as AjvOptions } from 'ajv';
import formats from 'ajv-formats';
import { OpenAPIBackend } from 'openapi-backend';
import type { Document, Operation } from 'openapi-backend';
import { parse } from 'yaml';

const addFormats = formats.default;

export const API_PREFIX = '/api/v1/catalog';
export const CONTRACT_PATH = fileURLToPath(new URL('../../openapi.yaml', import.meta.url));

export type ContractOperation = Operation<Document>;

export interface Contract {
  /** The document as parsed from openapi.yaml, served verbatim (as JSON) at /openapi.json. */
  document: Document;
  documentJson: string;
  /** Router and validator for the operations under the API prefix. */
  backend: OpenAPIBackend;
  /** Operations served outside the prefix (health, metrics, docs, the signed upload). */
  outsideOperations: ContractOperation[];
}

// openapi-backend builds draft-07 Ajv instances; the contract is JSON Schema 2020-12.
// Keep the formats it registered (int32, int64, float, double, byte, binary, password).
function ajv2020(original: { formats: Record<string, unknown> }, options: AjvOptions) {
  const ajv = new Ajv2020({ ...options, allErrors: true, strict: false });
  addFormats(ajv);
  for (const [name, format] of Object.entries(original.formats)) {
    if (!(name in ajv.formats)) ajv.addFormat(name, format as never);
  }
  return ajv;
}

function isOutsidePrefix(operation: ContractOperation): boolean {
  const servers = (operation as { servers?: unknown[] }).servers ?? [];
  return servers.length > 0;
}

export async function loadContract(path = CONTRACT_PATH): Promise<Contract> {
  const document = parse(readFileSync(path, 'utf8')) as Document;
  const documentJson = JSON.stringify(document);
  const backend = new OpenAPIBackend({
    // A deep copy: openapi-backend dereferences in place, the served document keeps its $refs.
    definition: structuredClone(document),
    apiRoot: API_PREFIX,
    // openapi-backend checks documents against the 3.0 schema; Redocly lints the 3.1 contract instead.
    quick: true,
    validate: true,
    coerceTypes: true,
    customizeAjv: (original, options) => ajv2020(original as never, options) as never,
  });
  await backend.init();
  // The router rebuilds its flat list of operations (with lodash) on every match and validation;
  // the document no longer changes after init, so build it once.
  const operations = backend.router.getOperations();
  backend.router.getOperations = () => operations;
  const outsideOperations = operations.filter(isOutsidePrefix);
  return { document, documentJson, backend, outsideOperations };
}
