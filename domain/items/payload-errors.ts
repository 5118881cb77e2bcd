// The item payload schema's complaints in the service's words: a field path and a message a person can act on.
import type { ErrorObject } from 'ajv';
import type { ErrorDetail } from '../../platform/errors.ts';

export const PATTERN_MESSAGES: Record<string, string> = {
  externalSystem: 'must contain only letters, digits and the characters . _ : -',
  gtin13: 'must have exactly 13 digits',
  ncm: 'must have 8 digits (NNNNNNNN or NNNN.NN.NN)',
  url: 'must be an absolute http or https URL',
};
const TYPE_NAMES: Record<string, string> = {
  string: 'a string', number: 'a number', integer: 'an integer', boolean: 'a boolean',
  object: 'an object', array: 'an array', null: 'null',
};

function joinPath(base: string, segments: readonly (string | number)[]): string {
  return segments.length === 0 ? base.replace(/\.$/, '') : base + segments.join('.');
}

export function ajvDetail(error: ErrorObject, base: string): ErrorDetail | undefined {
  if (error.schemaPath.includes('/anyOf/')) return undefined; // the anyOf error itself says it once
  const segments = error.instancePath === ''
    ? []
    : error.instancePath.slice(1).split('/').map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
  const params = error.params as Record<string, unknown>;
  const field = segments.findLast((s) => !/^\d+$/.test(s)) ?? '';
  let message: string;
  switch (error.keyword) {
    case 'required':
      segments.push(String(params.missingProperty));
      message = 'is required';
      break;
    case 'additionalProperties':
      segments.push(String(params.additionalProperty));
      message = 'is not a known field';
      break;
    case 'type': {
      const types = ([] as unknown[]).concat(params.type).map((t) => TYPE_NAMES[String(t)] ?? String(t));
      message = `must be ${types.join(' or ')}`;
      break;
    }
    case 'minLength':
      message = params.limit === 1 ? 'must not be empty' : `must have at least ${params.limit} characters`;
      break;
    case 'maxLength':
      message = `must have at most ${params.limit} characters`;
      break;
    case 'maxItems':
      message = `must have at most ${params.limit} entries`;
      break;
    case 'minimum':
      message = params.limit === 0 ? 'must not be negative' : `must be at least ${params.limit}`;
      break;
    case 'maximum':
      message = `must be at most ${params.limit}`;
      break;
    case 'exclusiveMaximum':
      message = `must be less than ${params.limit}`;
      break;
    case 'enum':
      message = `must be one of: ${(params.allowedValues as unknown[]).join(', ')}`;
      break;
    case 'pattern':
    case 'format':
      message = PATTERN_MESSAGES[field] ?? 'has an invalid format';
      break;
    case 'anyOf':
      message = field === 'metadata' ? 'must be an object or null' : 'is not valid';
      break;
    default:
      message = error.message ?? 'is not valid';
  }
  return { path: joinPath(base, segments), message };
}
