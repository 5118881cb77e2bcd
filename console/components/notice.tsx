// What went wrong, as the service said it (the envelope's message and per-field details), or a confirmation.
import type { ComponentChildren } from 'preact';
import { ApiError } from '../api.ts';

export function ErrorNotice({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const details = error instanceof ApiError ? error.body?.error.details ?? [] : [];
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div class="notice error" role="alert">
      <p>{message}</p>
      {details.length > 0 && <ul>{details.map((d) => <li key={`${d.path}:${d.message}`}><code>{d.path}</code> {d.message}</li>)}</ul>}
    </div>
  );
}

export function DoneNotice({ children }: { children: ComponentChildren }) {
  return <div class="notice done" role="status">{children}</div>;
}
