// One delivery: every attempt's answer and duration, the exact body sent, and a retry.
import { useEffect, useState } from 'preact/hooks';
import { api, call, can } from './api.ts';
import { href } from './router.ts';
import { JsonView } from './components/json-view.tsx';
import { DoneNotice, ErrorNotice } from './components/notice.tsx';
import { StatusBadge } from './components/status-badge.tsx';
import { useLoad } from './components/use-load.ts';
import { When } from './components/when.tsx';

export function DeliveryScreen({ webhookId, deliveryId }: { webhookId: string; deliveryId: string }) {
  useEffect(() => { document.title = 'Delivery · Catalog console'; }, []);
  const delivery = useLoad(() => call((opts) => api.getWebhookDelivery(webhookId, deliveryId, opts)), [webhookId, deliveryId], {
    everyMs: 2000, live: (data) => data?.status === 'pending',
  });
  const [error, setError] = useState<unknown>(undefined);
  const [retried, setRetried] = useState(false);
  const retry = async () => {
    setError(undefined);
    try { await call((opts) => api.retryWebhookDelivery(webhookId, deliveryId, opts)); setRetried(true); await delivery.reload(); } catch (caught) { setError(caught); }
  };
  const current = delivery.data;
  if (!current) return <><h1>Delivery</h1><ErrorNotice error={delivery.error} /></>;
  return (
    <>
      <p><a href={href('webhooks', webhookId)}>← The webhook and its log</a></p>
      <h1>Delivery of {current.eventType} <StatusBadge status={current.status} /></h1>
      <dl class="facts">
        <dt>Event</dt><dd><code>{current.eventId}</code></dd>
        <dt>Next attempt</dt><dd><When at={current.nextAttemptAt} /></dd>
        <dt>Created</dt><dd><When at={current.createdAt} /></dd>
      </dl>
      {current.status !== 'succeeded' && can('webhooks:manage') && <button type="button" onClick={() => void retry()}>Retry the delivery</button>}
      {retried && <DoneNotice>The delivery was queued again.</DoneNotice>}
      <ErrorNotice error={error} />
      <h2>Attempts</h2>
      <table>
        <caption class="visually-hidden">Attempts</caption>
        <thead><tr><th scope="col">#</th><th scope="col">Started</th><th scope="col">Answer</th><th scope="col">Duration</th><th scope="col">Response excerpt</th></tr></thead>
        <tbody>
          {current.attempts.map((attempt) => (
            <tr key={attempt.attemptNumber}>
              <td class="number">{attempt.attemptNumber}</td>
              <td><When at={attempt.startedAt} /></td>
              <td>{attempt.statusCode ?? attempt.error ?? '—'}</td>
              <td class="number">{attempt.durationMs} ms</td>
              <td><code>{attempt.responseBodyExcerpt ?? ''}</code></td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Payload</h2>
      <JsonView value={current.body} label="The payload sent" />
    </>
  );
}
