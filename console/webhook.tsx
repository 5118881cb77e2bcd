// One webhook: its settings and pace (edited in the form), its backlog, its secret rotated, a test
// event, resume and recover, and the delivery log with each delivery's outcome and a retry.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { DeliveryStatus, Webhook } from '../generated/client.ts';
import { api, call, can } from './api.ts';
import { go, href } from './router.ts';
import { ConfirmButton } from './components/confirm-button.tsx';
import { DoneNotice, ErrorNotice } from './components/notice.tsx';
import { usePages } from './components/pages.ts';
import { StatusBadge } from './components/status-badge.tsx';
import { useLoad } from './components/use-load.ts';
import { When } from './components/when.tsx';
import { WebhookForm } from './components/webhook-form.tsx';
import type { WebhookSettings } from './components/webhook-form.tsx';
import { SecretOnce } from './webhooks.tsx';

function Actions({ webhook, changed }: { webhook: Webhook; changed: () => void }) {
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState<ComponentChildren>(undefined);
  const [since, setSince] = useState('');
  const act = async (action: () => Promise<ComponentChildren>) => {
    setError(undefined);
    setDone(undefined);
    try { setDone(await action()); changed(); } catch (caught) { setError(caught); }
  };
  const test = () => act(async () => { await call((opts) => api.testWebhook(webhook.id, opts)); return 'A webhook.test event is on its way; it appears in the delivery log.'; });
  const rotate = () => act(async () => {
    const rotated = await call((opts) => api.rotateWebhookSecret(webhook.id, opts));
    return <SecretOnce secret={rotated.secret} what={`The secret was rotated; the previous one stays valid until ${new Date(rotated.previousSecretExpiresAt).toLocaleString()}.`} />;
  });
  const resume = () => act(async () => { await call((opts) => api.resumeWebhook(webhook.id, opts)); return 'The webhook is active again.'; });
  const recover = (event: Event) => {
    event.preventDefault();
    void act(async () => {
      await call((opts) => api.recoverWebhook(webhook.id, { since: new Date(since).toISOString() }, opts));
      return 'The events since then are being delivered again.';
    });
  };
  const remove = () => act(async () => { await call((opts) => api.deleteWebhook(webhook.id, opts)); go('webhooks'); return undefined; });
  return (
    <section aria-labelledby="actions-heading">
      <h2 id="actions-heading" class="visually-hidden">Actions</h2>
      <div class="actions">
        <button type="button" onClick={() => void test()}>Send a test event</button>
        <button type="button" onClick={() => void rotate()}>Rotate the secret</button>
        {webhook.status === 'disabled' && <button type="button" onClick={() => void resume()}>Resume the webhook</button>}
        <ConfirmButton label="Delete the webhook" confirm="Delete this webhook and its delivery log?" onConfirm={() => void remove()} />
      </div>
      <form class="inline" onSubmit={recover}>
        <label for="recover-since">Deliver again every event since</label>
        <input id="recover-since" type="datetime-local" required value={since} onInput={(e) => setSince((e.currentTarget as HTMLInputElement).value)} />
        <button type="submit">Recover</button>
      </form>
      <ErrorNotice error={error} />
      {done && <DoneNotice>{done}</DoneNotice>}
    </section>
  );
}

function DeliveryLog({ webhookId }: { webhookId: string }) {
  const [status, setStatus] = useState<DeliveryStatus | ''>('');
  const [error, setError] = useState<unknown>(undefined);
  const log = usePages(async (cursor) => {
    const page = await call((opts) => api.listWebhookDeliveries(webhookId, { limit: 50, cursor, ...(status ? { status } : {}) }, opts));
    return { rows: page.deliveries, nextCursor: page.nextCursor };
  }, [webhookId, status]);
  const retry = async (deliveryId: string) => {
    setError(undefined);
    try { await call((opts) => api.retryWebhookDelivery(webhookId, deliveryId, opts)); log.reload(); } catch (caught) { setError(caught); }
  };
  return (
    <section aria-labelledby="log-heading">
      <h2 id="log-heading">Delivery log</h2>
      <div class="filters">
        <label>Status <select value={status} onChange={(e) => setStatus((e.currentTarget as HTMLSelectElement).value as DeliveryStatus | '')}>
          <option value="">all</option><option value="pending">pending</option><option value="succeeded">succeeded</option><option value="exhausted">exhausted</option>
        </select></label>
        <button type="button" onClick={log.reload}>Refresh the log</button>
      </div>
      <ErrorNotice error={log.error ?? error} />
      {log.rows.length === 0 && !log.loading ? <p>No delivery yet.</p> : (
        <table>
          <caption class="visually-hidden">Deliveries, newest first</caption>
          <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {log.rows.map((delivery) => (
              <tr key={delivery.id}>
                <td><a href={href('webhooks', webhookId, 'deliveries', delivery.id)}>{delivery.eventType}</a></td>
                <td><StatusBadge status={delivery.status} /></td>
                <td class="number">{delivery.attemptCount}</td>
                <td>{delivery.lastStatusCode ?? ''} {delivery.lastError ?? ''}</td>
                <td><When at={delivery.createdAt} /></td>
                <td>{delivery.status !== 'succeeded' && can('webhooks:manage') && <button type="button" onClick={() => void retry(delivery.id)}>Retry<span class="visually-hidden"> the {delivery.eventType} delivery</span></button>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {log.more && <button type="button" onClick={log.more}>Show more deliveries</button>}
    </section>
  );
}

export function WebhookScreen({ webhookId }: { webhookId: string }) {
  const [editing, setEditing] = useState(false);
  const webhook = useLoad(() => call((opts) => api.getWebhook(webhookId, opts)), [webhookId]);
  useEffect(() => { document.title = 'Webhook · Catalog console'; }, []);
  const current = webhook.data;
  if (!current) return <><h1>Webhook</h1><ErrorNotice error={webhook.error} /></>;
  const save = async (settings: WebhookSettings) => {
    await call((opts) => api.updateWebhook(webhookId, settings, opts));
    setEditing(false);
    await webhook.reload();
  };
  return (
    <>
      <p><a href={href('webhooks')}>← All webhooks</a></p>
      <h1>Webhook <StatusBadge status={current.status} /></h1>
      <dl class="facts">
        <dt>Endpoint</dt><dd>{current.url}</dd>
        <dt>Events</dt><dd>{current.events.join(', ')}</dd>
        <dt>Ordered</dt><dd>{current.ordered ? 'yes: each item\'s events in the order they happened' : 'no'}</dd>
        <dt>Filter</dt><dd>{current.filter ? <code>{JSON.stringify(current.filter)}</code> : 'none'}</dd>
        <dt>Pace</dt><dd>{current.rateLimit
          ? <>{current.rateLimit.perSecond} a second{current.rateLimit.maxInFlight !== undefined && <>, at most {current.rateLimit.maxInFlight} at once</>}</>
          : 'no limit: as fast as the service can'}</dd>
        <dt>Waiting</dt><dd>{current.backlog.waiting === 0 ? 'nothing' : <>{current.backlog.waiting} deliveries, the oldest since <When at={current.backlog.oldestWaitingSince} /></>}
          {current.backlog.pausedUntil && <> (paused by a 429 until <When at={current.backlog.pausedUntil} />)</>}</dd>
        <dt>Last success</dt><dd>{current.lastSuccessAt ? <When at={current.lastSuccessAt} /> : 'never'}</dd>
        <dt>Consecutive failures</dt><dd>{current.consecutiveFailures}{current.disabledAt && <> (disabled <When at={current.disabledAt} />)</>}</dd>
      </dl>
      {current.status === 'disabled' && (
        <div class="notice error" role="status">
          <p>Disabled <When at={current.disabledAt} /> after {current.consecutiveFailures} deliveries in a row were exhausted: no event is queued for it
            meanwhile and its waiting deliveries are paused. Fix the endpoint, then resume the webhook; then retry what was exhausted, or recover a period.</p>
        </div>
      )}
      {can('webhooks:manage') && <Actions webhook={current} changed={() => void webhook.reload()} />}
      {can('webhooks:manage') && (editing
        ? <section aria-labelledby="edit-heading"><h2 id="edit-heading">Edit the webhook</h2><WebhookForm initial={current} submitLabel="Save the webhook" onSubmit={save} /></section>
        : <button type="button" onClick={() => setEditing(true)}>Edit the webhook</button>)}
      {can('audit:read') && <p><a href={href('audit', 'webhook', webhookId)}>Who changed this webhook</a></p>}
      <DeliveryLog webhookId={webhookId} />
    </>
  );
}
