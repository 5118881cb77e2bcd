// A webhook's filter (docs/webhooks.md, "Filters"): validated, then compiled to a Postgres jsonpath predicate the fan-out applies to each event.
import type { WebhookFilter } from '../../generated/client.ts';
import { validationError } from '../../platform/errors.ts';
import type { ErrorDetail } from '../../platform/errors.ts';

// Bounds that keep a filter cheap to evaluate on every event of a busy catalog.
const MAX_DEPTH = 5;
const MAX_CONDITIONS = 50;
const FIELD = /^(type|resourceId|changedFields|data(\.[A-Za-z0-9_-]+)*)$/;
const FILTER_KEYS = new Set(['all', 'any', 'not', 'field', 'equals', 'in', 'exists']);

type Value = string | number | boolean | null;

/** The event's JSON path of a filter field: `changedFields` is item.updated's `data.changedFields`. */
function pathOf(field: string): string {
  const parts = field === 'changedFields' ? ['data', 'changedFields'] : field.split('.');
  return `$${parts.map((part) => `.${JSON.stringify(part)}`).join('')}`;
}

// JSON's string, number and literal syntax is jsonpath's too.
const literal = (value: Value) => JSON.stringify(value);

/**
 * The filter as a jsonpath predicate over the event (envelope and `data`), or a 400 naming each
 * problem with its path (`filter.all.1.field`…). Lax mode: a comparison with an array holds when
 * one of its elements matches, so `changedFields` equal to `price` means "price changed".
 */
export function compileFilter(filter: WebhookFilter): string {
  const problems: ErrorDetail[] = [];
  let conditions = 0;
  const compile = (node: WebhookFilter, path: string, depth: number): string => {
    const problem = (message: string, at = path) => {
      problems.push({ path: at, message });
      return 'false';
    };
    if (depth > MAX_DEPTH) return problem(`nests deeper than ${MAX_DEPTH} levels`);
    const keys = Object.keys(node);
    // The contract leaves the schema open for readers; a writer's unknown key is refused here.
    const unknown = keys.filter((k) => !FILTER_KEYS.has(k));
    if (unknown.length > 0) return problem(`has no ${unknown.map((k) => `"${k}"`).join(', ')}: a condition takes "field" with "equals", "in" or "exists", or one of "all", "any", "not"`);
    const combinators = keys.filter((k) => k === 'all' || k === 'any' || k === 'not');
    if (combinators.length > 0) {
      if (keys.length > 1) return problem(`takes "${combinators[0]}" alone, without ${keys.filter((k) => k !== combinators[0]).map((k) => `"${k}"`).join(', ')}`);
      if (node.not !== undefined) return `!(${compile(node.not, `${path}.not`, depth + 1)})`;
      const [name, list] = node.all !== undefined ? ['all', node.all] as const : ['any', node.any!] as const;
      if (list.length === 0) return problem('needs at least one condition', `${path}.${name}`);
      return `(${list.map((child, i) => compile(child, `${path}.${name}.${i}`, depth + 1)).join(name === 'all' ? ' && ' : ' || ')})`;
    }
    conditions += 1;
    if (conditions === MAX_CONDITIONS + 1) problem(`has more than ${MAX_CONDITIONS} conditions`, 'filter');
    if (node.field === undefined) return problem('needs "field" (with "equals", "in" or "exists"), or one of "all", "any", "not"');
    if (!FIELD.test(node.field)) {
      return problem('must be "type", "resourceId", "changedFields", "data" or a dotted path under it (data.brand.name)', `${path}.field`);
    }
    const tests = (['equals', 'in', 'exists'] as const).filter((k) => k in node);
    if (tests.length !== 1) return problem(tests.length === 0 ? 'needs one of "equals", "in", "exists"' : `takes one of ${tests.map((t) => `"${t}"`).join(', ')}, not several`);
    const target = pathOf(node.field);
    if (node.exists !== undefined) return node.exists ? `exists(${target})` : `!exists(${target})`;
    if (node.in !== undefined) {
      if (node.in.length === 0) return problem('needs at least one value', `${path}.in`);
      return `(${node.in.map((value) => `${target} == ${literal(value as Value)}`).join(' || ')})`;
    }
    return `${target} == ${literal(node.equals as Value)}`;
  };
  const compiled = compile(filter, 'filter', 1);
  if (problems.length > 0) throw validationError(problems, `Invalid filter: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}.`);
  return compiled;
}
