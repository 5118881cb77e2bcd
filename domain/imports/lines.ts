// One import line → a payload for the upsert path, or a line error; and upsert errors → line errors.
import { isUtf8 } from 'node:buffer';
import type { ImportErrorType } from '../../generated/client.ts';
import type { ProductError } from '../../platform/errors.ts';
import { MAX_LINE_BYTES, RAW_LINE_BYTES } from './line-reader.ts';
import type { FileLine } from './line-reader.ts';

export interface LineError {
  lineNumber: number;
  externalId: string | null;
  errorType: ImportErrorType;
  errorMessage: string;
  rawLine: string;
}

export type ParsedLine = { ok: true; value: object } | { ok: false; error: LineError };


/** The first 4 KB as text; a character cut at the boundary or invalid UTF-8 becomes U+FFFD. */
export function rawLineOf(line: FileLine): string {
  return line.head.subarray(0, RAW_LINE_BYTES).toString('utf8');
}

const EXTERNAL_ID = /"externalId"\s*:\s*("(?:[^"\\]|\\.)*")/;

/** The externalId of a line that is not valid JSON, when it can still be read. */
function sniffExternalId(text: string): string | null {
  const match = EXTERNAL_ID.exec(text);
  if (!match) return null;
  try {
    const value = JSON.parse(match[1]!) as unknown;
    return typeof value === 'string' && value !== '' ? value : null;
  } catch {
    return null;
  }
}

function lineError(line: FileLine, errorMessage: string, externalId: string | null = null): ParsedLine {
  return { ok: false, error: { lineNumber: line.lineNumber, externalId, errorType: 'validation', errorMessage, rawLine: rawLineOf(line) } };
}

export function parseLine(line: FileLine): ParsedLine {
  const bytes = line.bytes;
  if (bytes === undefined) {
    return lineError(line, `line: longer than ${MAX_LINE_BYTES} bytes (${line.length} bytes)`, sniffExternalId(line.head.toString('utf8')));
  }
  if (!isUtf8(bytes)) return lineError(line, 'line: not valid UTF-8', sniffExternalId(bytes.toString('utf8')));
  const text = bytes.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return lineError(line, `line: not valid JSON (${(error as Error).message})`, sniffExternalId(text));
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return lineError(line, `line: must be a JSON object (one item per line), not ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value}`);
  }
  return { ok: true, value };
}

/** The consumer's mapping of product errors to errorType (STYLE: one catalogue, two doors). */
export function errorTypeOf(error: ProductError): ImportErrorType {
  switch (error.code) {
    case 'validation_error': return 'validation';
    case 'conflict': return 'conflict';
    case 'not_found': case 'unprocessable': return 'reference';
    default: return 'database';
  }
}

/** For validation (and conflicts), the message is prefixed with the field path: `sku: …`. */
export function errorMessageOf(error: ProductError): string {
  const details = error.details ?? [];
  if (error.code === 'validation_error' && details.length > 0) return details.map((d) => `${d.path}: ${d.message}`).join('; ');
  if (details.length > 0) return `${details[0]!.path}: ${error.message}`;
  return error.message;
}
