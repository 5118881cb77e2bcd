// Instants as the reader's local time, with the exact ISO instant a hover away.
export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">—</span>;
  return <time dateTime={at} title={at}>{new Date(at).toLocaleString()}</time>;
}
