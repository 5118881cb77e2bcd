// A status in words with a colour that repeats it (never colour alone): jobs, deliveries, webhooks, media.
const TONES: Record<string, string> = {
  completed: 'good', delivered: 'good', active: 'good', ingested: 'good', created: 'good', updated: 'good', succeeded: 'good',
  completed_with_errors: 'warn', pending: 'warn', retrying: 'warn', processing: 'busy', queued: 'busy', awaiting_upload: 'busy',
  failed: 'bad', exhausted: 'bad', disabled: 'bad', cancelled: 'muted', unchanged: 'muted', deleted: 'muted', revoked: 'muted', expired: 'muted',
};

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge ${TONES[status] ?? 'muted'}`}>{status.replaceAll('_', ' ')}</span>;
}
