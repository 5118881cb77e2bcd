// The one rule for text that Postgres can store: no NUL character and no lone UTF-16 surrogate.
// Postgres text and jsonb hold neither (a NUL ends a C string; a lone surrogate has no UTF-8
// form and jsonb refuses its `\ud800` escape), so such a value is refused with its field path
// before any statement runs, instead of failing the statement and whatever shares it.

export interface TextProblem {
  path: string;
  message: string;
}

const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';
const SURROGATE_MESSAGE = 'must be valid Unicode text';

/** Why `text` cannot be stored, or undefined when it can. */
export function unstorableReason(text: string): string | undefined {
  if (text.includes('\u0000')) return NUL_MESSAGE;
  if (!text.isWellFormed()) return SURROGATE_MESSAGE;
  return undefined;
}

/** `text` made storable for messages and diagnostics: NUL and lone surrogates become U+FFFD. */
export function storableText(text: string): string {
  return text.toWellFormed().replaceAll('\u0000', '\uFFFD');
}

const joined = (path: string, segment: string) => (path === '' ? segment : `${path}.${segment}`);

/**
 * Every unstorable string or object key in a JSON value, as `{ path, message }` with dot paths
 * below `path`; at most `limit` problems, so the work and the answer stay bounded.
 */
export function unstorableTexts(value: unknown, path: string, limit: number): TextProblem[] {
  // Nearly every value is clean: find that out without building a path for every field.
  if (!holdsUnstorableText(value)) return [];
  const problems: TextProblem[] = [];
  // An explicit stack: a deeply nested body must not overflow the call stack.
  const stack: Array<[unknown, string]> = [[value, path]];
  while (stack.length > 0 && problems.length < limit) {
    const [current, at] = stack.pop()!;
    if (typeof current === 'string') {
      const reason = unstorableReason(current);
      if (reason) problems.push({ path: at, message: reason });
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push([current[i], joined(at, String(i))]);
    } else if (typeof current === 'object' && current !== null) {
      const entries = Object.entries(current);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        const keyPath = joined(at, storableText(key));
        const reason = unstorableReason(key);
        if (reason) problems.push({ path: keyPath, message: `has a key that ${reason}` });
        stack.push([child, keyPath]);
      }
    }
  }
  return problems.slice(0, limit);
}

function holdsUnstorableText(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current === 'string') {
      if (unstorableReason(current) !== undefined) return true;
    } else if (Array.isArray(current)) {
      for (const child of current) stack.push(child);
    } else if (typeof current === 'object' && current !== null) {
      for (const key in current) {
        if (!Object.hasOwn(current, key)) continue;
        if (unstorableReason(key) !== undefined) return true;
        stack.push((current as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}
