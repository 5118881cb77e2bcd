// The catalog's API keys: never a secret after it was shown once; new keys only within the
// session's own scopes, which the API enforces whatever a page sends.
import { useEffect, useState } from 'preact/hooks';
import type { Scope } from '../generated/client.ts';
import { api, call, session } from './api.ts';
import { ConfirmButton } from './components/confirm-button.tsx';
import { DoneNotice, ErrorNotice } from './components/notice.tsx';
import { StatusBadge } from './components/status-badge.tsx';
import { useLoad } from './components/use-load.ts';
import { When } from './components/when.tsx';

export function KeysScreen() {
  useEffect(() => { document.title = 'Keys · Catalog console'; }, []);
  const own = (session.value?.scopes ?? []).filter((scope) => scope !== 'keys:manage') as Scope[];
  const [scopes, setScopes] = useState<Scope[]>(['catalog:read']);
  const [label, setLabel] = useState('');
  const [created, setCreated] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const keys = useLoad(async () => (await call((opts) => api.listKeys({}, opts))).keys, []);
  const create = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const answer = await call((opts) => api.createKey({ scopes, ...(label.trim() ? { label: label.trim() } : {}) }, opts));
      setCreated(answer.key);
      setLabel('');
      await keys.reload();
    } catch (caught) {
      setError(caught);
    }
  };
  const revoke = async (keyId: string) => {
    setError(undefined);
    try { await call((opts) => api.revokeKey(keyId, opts)); await keys.reload(); } catch (caught) { setError(caught); }
  };
  return (
    <>
      <h1>API keys</h1>
      <form class="panel" onSubmit={(event) => void create(event)} aria-labelledby="new-key-heading">
        <h2 id="new-key-heading">New key</h2>
        <label for="key-label">What it is for</label>
        <input id="key-label" type="text" maxLength={200} value={label} placeholder="ERP nightly feed" onInput={(e) => setLabel((e.currentTarget as HTMLInputElement).value)} />
        <fieldset>
          <legend>Scopes (at most this session's own)</legend>
          {own.map((scope) => (
            <label class="check" key={scope}><input type="checkbox" checked={scopes.includes(scope)}
              onChange={(e) => setScopes((e.currentTarget as HTMLInputElement).checked ? [...scopes, scope] : scopes.filter((s) => s !== scope))} /> {scope}</label>
          ))}
        </fieldset>
        <button type="submit">Create the key</button>
      </form>
      {created && (
        <DoneNotice>
          <p>The key was created. Store it now: it is shown only once.</p>
          <pre class="secret" tabIndex={0} aria-label="The new API key">{created}</pre>
        </DoneNotice>
      )}
      <ErrorNotice error={keys.error ?? error} />
      <table>
        <caption class="visually-hidden">API keys</caption>
        <thead><tr><th scope="col">Key</th><th scope="col">For</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Allowed from</th><th scope="col">State</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
        <tbody>
          {(keys.data ?? []).map((key) => (
            <tr key={key.id}>
              <td><code>{key.prefix}…</code></td>
              <td>{key.label ?? '—'}</td>
              <td>{key.scopes.join(', ')}</td>
              <td><When at={key.createdAt} /></td>
              <td>{key.lastUsedAt ? <When at={key.lastUsedAt} /> : 'never'}</td>
              <td>{key.allowedCidrs ? key.allowedCidrs.join(', ') : 'anywhere'}</td>
              <td>{key.revokedAt ? <StatusBadge status="revoked" /> : key.expiresAt && Date.parse(key.expiresAt) < Date.now() ? <StatusBadge status="expired" /> : <StatusBadge status="active" />}</td>
              <td>{!key.revokedAt && (
                <ConfirmButton label={<>Revoke<span class="visually-hidden"> key {key.prefix}</span></>} confirm={`Revoke key ${key.prefix}…?`} onConfirm={() => void revoke(key.id)} />
              )}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
