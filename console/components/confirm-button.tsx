// A destructive action asked twice: the first press shows what it will do and a second button that does it.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

export function ConfirmButton({ label, confirm, onConfirm }: { label: ComponentChildren; confirm: string; onConfirm: () => void }) {
  const [asking, setAsking] = useState(false);
  if (!asking) return <button type="button" class="danger" onClick={() => setAsking(true)}>{label}</button>;
  return (
    <span class="confirm" role="group" aria-label={confirm}>
      {confirm}{' '}
      <button type="button" class="danger" onClick={() => { setAsking(false); onConfirm(); }}>Yes, {confirm.replace(/\?$/, '').toLowerCase()}</button>
      <button type="button" class="link" onClick={() => setAsking(false)}>Keep it</button>
    </span>
  );
}
