// Webhooks: every endpoint with its health, and a new one made from a form.
import { useEffect, useState } from 'preact/hooks';
import type { WebhookCreated } from '../generated/client.ts';
import { api, call, can } from './api.ts';
import { href } from './router.ts';
import { DoneNotice, ErrorNotice } from './components/notice.tsx';
import { usePages } from './components/pages.ts';
import { StatusBadge } from './components/status-badge.tsx';
import { When } from './components/when.tsx';
import { WebhookForm } from './components/webhook-form.tsx';
import type { WebhookSettings } from './components/webhook-form.tsx';

export function SecretOnce({ secret, what }: { secret: string; what: string }) {
  return (
    <DoneNotice>
      <p>{what} Store the signing secret now: it is shown only once.</p>
      <pre class="secret" tabIndex={0} aria-label="Signing secret">{secret}</pre>
    </DoneNotice>
  );
}

export function WebhooksScreen() {
  useEffect(() => { document.title = 'Webhooks · Catalog console'; }, []);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<WebhookCreated | undefined>(undefined);
  const list = usePages(async (cursor) => {
    const page = await call((opts) => api.listWebhooks({ limit: 50, cursor }, opts));
    return { rows: page.webhooks, nextCursor: page.nextCursor };
  }, []);
  const create = async (settings: WebhookSettings) => {
    const answer = await call((opts) => api.createWebhook(settings, {}, opts));
    setCreated(answer);
    setCreating(false);
    list.reload();
  };
  return (
    <>
      <h1>Webhooks</h1>
      {created && <><SecretOnce secret={created.secret} what="The webhook was created." /><p><a href={href('webhooks', created.id)}>Open the new webhook</a></p></>}
      {can('webhooks:manage') && !creating && <button type="button" onClick={() => { setCreating(true); setCreated(undefined); }}>New webhook</button>}
      {creating && (
        <section aria-labelledby="new-webhook">
          <h2 id="new-webhook">New webhook</h2>
          <WebhookForm submitLabel="Create the webhook" onSubmit={create} />
          <button type="button" class="link" onClick={() => setCreating(false)}>Cancel</button>
        </section>
      )}
      <ErrorNotice error={list.error} />
      {list.rows.length === 0 && !list.loading ? <p>No webhook yet.</p> : (
        <table>
          <caption class="visually-hidden">Webhooks</caption>
          <thead><tr><th scope="col">Endpoint</th><th scope="col">Events</th><th scope="col">Health</th><th scope="col">Consecutive failures</th><th scope="col">Created</th></tr></thead>
          <tbody>
            {list.rows.map((webhook) => (
              <tr key={webhook.id}>
                <td><a href={href('webhooks', webhook.id)}>{webhook.url}</a>{webhook.description && <div class="hint">{webhook.description}</div>}</td>
                <td>{webhook.events.join(', ')}{webhook.filter && <span class="badge muted">filtered</span>}{webhook.ordered && <span class="badge muted">ordered</span>}{webhook.rateLimit && <span class="badge muted">{webhook.rateLimit.perSecond}/s</span>}</td>
                <td><StatusBadge status={webhook.status} />{webhook.disabledAt && <> since <When at={webhook.disabledAt} /></>}
                  <div class="hint">last success {webhook.lastSuccessAt ? <When at={webhook.lastSuccessAt} /> : 'never'}</div>
                  {webhook.backlog.waiting > 0 && <div class="hint">{webhook.backlog.waiting} waiting since <When at={webhook.backlog.oldestWaitingSince} /></div>}</td>
                <td class="number">{webhook.consecutiveFailures}</td>
                <td><When at={webhook.createdAt} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.more && <button type="button" onClick={list.more}>Show more webhooks</button>}
    </>
  );
}
