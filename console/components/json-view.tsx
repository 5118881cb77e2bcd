// A JSON value as indented text, in a region a keyboard can scroll.
export function JsonView({ value, label }: { value: unknown; label: string }) {
  const text = typeof value === 'string' ? prettyText(value) : JSON.stringify(value, null, 2);
  return <pre class="json" tabIndex={0} role="region" aria-label={label}>{text}</pre>;
}

function prettyText(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
