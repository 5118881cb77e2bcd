// The catalog's audit log, newest first: who changed its keys, webhooks, imports and console sessions, when, from where, and what each change was.
import { useEffect, useState } from 'preact/hooks';
import type { AuditEntry } from '../generated/client.ts';
import { api, call, session } from './api.ts';
import { go, href } from './router.ts';
import { Diff } from './components/diff.tsx';
import { ErrorNotice } from './components/notice.tsx';
import { usePages } from './components/pages.ts';
import { When } from './components/when.tsx';

// The contract's actions (listAuditLog); an action added later still shows, just not in this filter.
const ACTIONS = [
  'key.created', 'key.updated', 'key.revoked',
  'webhook.created', 'webhook.updated', 'webhook.deleted', 'webhook.secret_rotated', 'webhook.resumed', 'webhook.recovered', 'webhook.disabled',
  'webhook_delivery.retried', 'item.version_restored', 'import.cancelled', 'import.retried', 'parked_record.resent',
  'console_link.created', 'console_session.started', 'console_session.ended', 'console_session.revoked', 'catalog.created',
];

function Actor({ actor }: { actor: AuditEntry['actor'] }) {
  if (actor.kind === 'service') return <>the service</>;
  if (actor.kind === 'cli') return <>the operator <code>{actor.operator}</code></>;
  if (actor.keyId === session.value?.id) return <>this console session</>;
  const name = `${actor.label ? `"${actor.label}" ` : ''}${actor.keyPrefix ?? `…${(actor.keyId ?? '').slice(-8)}`}…`;
  return <>{actor.kind === 'console' ? 'console session' : 'key'} {name}</>;
}

/** The resource, linked to its screen where it has one. */
function Resource({ resource }: { resource: AuditEntry['resource'] }) {
  const { type, id } = resource;
  const [externalSystem, ...rest] = id.split('/');
  const link = type === 'webhook' ? href('webhooks', id)
    : type === 'import' ? href('imports', id)
      : type === 'item' && rest.length > 0 ? href('items', externalSystem!, rest.join('/'))
        : undefined;
  const label = <>{type.replaceAll('_', ' ')} <code>{id}</code></>;
  return link ? <a href={link}>{label}</a> : label;
}

/** Before and after as field-by-field changes; a creation has only an after, a deletion only a before. */
function changesOf(entry: AuditEntry) {
  const fields = [...new Set([...Object.keys(entry.before ?? {}), ...Object.keys(entry.after ?? {})])];
  return fields.map((field) => ({ field, previous: entry.before?.[field], value: entry.after?.[field] }));
}

export function AuditScreen({ resourceType, resourceId }: { resourceType: string | undefined; resourceId: string | undefined }) {
  useEffect(() => { document.title = 'Audit log · Catalog console'; }, []);
  const [action, setAction] = useState('');
  const entries = usePages(async (cursor) => {
    const page = await call((opts) => api.listAuditLog({
      limit: 50, cursor, ...(action ? { action } : {}), ...(resourceType ? { resourceType } : {}), ...(resourceId ? { resourceId } : {}),
    }, opts));
    return { rows: page.entries, nextCursor: page.nextCursor };
  }, [action, resourceType, resourceId]);
  return (
    <>
      <h1>Audit log{resourceId && <> of <Resource resource={{ type: resourceType ?? '', id: resourceId }} /></>}</h1>
      <p>Who changed this catalog's keys, webhooks, imports and console sessions, newest first.</p>
      <div class="filters">
        <label>Action <select value={action} onChange={(e) => setAction((e.currentTarget as HTMLSelectElement).value)}>
          <option value="">every action</option>
          {ACTIONS.map((value) => <option key={value} value={value}>{value}</option>)}
        </select></label>
        {resourceId && <button type="button" class="link" onClick={() => go('audit')}>Every resource</button>}
      </div>
      <ErrorNotice error={entries.error} />
      {!entries.loading && entries.rows.length === 0 && <p role="status">No change recorded{action ? ' for this action' : ''}.</p>}
      <ol class="timeline" aria-label="Changes, newest first">
        {entries.rows.map((entry) => (
          <li key={entry.id}>
            <h2 class="entry"><strong>{entry.action}</strong> <When at={entry.at} /></h2>
            <p class="source">
              <Resource resource={entry.resource} />, by <Actor actor={entry.actor} />
              {entry.clientAddress && <> from <code>{entry.clientAddress}</code></>}
              {entry.requestId && <>, request <code>{entry.requestId}</code></>}
            </p>
            <Diff changes={changesOf(entry)} caption={`What ${entry.action} changed`} />
          </li>
        ))}
      </ol>
      {entries.more && <button type="button" onClick={entries.more}>Show older changes</button>}
    </>
  );
}
