// The console's entry: redeems a link from the fragment, then shows the screen the fragment names.
import { render } from 'preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, call, can, ended, endSession, session, startSession } from './api.ts';
import { go, href, route } from './router.ts';
import { ErrorNotice } from './components/notice.tsx';
import { When } from './components/when.tsx';
import { ImportsScreen } from './imports.tsx';
import { ImportScreen } from './import.tsx';
import { WebhooksScreen } from './webhooks.tsx';
import { WebhookScreen } from './webhook.tsx';
import { DeliveryScreen } from './delivery.tsx';
import { ItemsScreen } from './items.tsx';
import { ItemScreen } from './item.tsx';
import { EventsScreen } from './events.tsx';
import { KeysScreen } from './keys.tsx';
import { AuditScreen } from './audit.tsx';

// The single-use token arrives in the fragment (#link=…), which no request carries; it leaves the
// address bar and the history before anything else runs.
const linkToken = /^#link=([A-Za-z0-9_]+)$/.exec(location.hash)?.[1];
if (linkToken) {
  history.replaceState(null, '', `${location.pathname}#/imports`);
  route.value = ['imports'];
}

const REFUSALS: Record<string, [string, string]> = {
  used: ['This link was already used', 'A console link opens one session only. Ask for a new link from where you got this one.'],
  expired: ['This link has expired', 'Console links must be opened within minutes of being made. Ask for a new one.'],
  revoked: ['This link was revoked', 'Someone withdrew it. Ask for a new link if you still need the console.'],
  unknown: ['This link is not valid', 'It may have been copied incompletely. Ask for a new link.'],
};

function Redeem({ token }: { token: string }) {
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    call((opts) => api.redeemConsoleLink({ link: token }, opts)).then((opened) => {
      startSession({ token: opened.token, id: opened.id, catalogId: opened.catalogId, catalogName: opened.catalogName, scopes: opened.scopes, expiresAt: opened.expiresAt });
      go('imports');
    }, setError);
  }, [token]);
  if (!error) return <Page title="Opening the console…"><p>Checking your link.</p></Page>;
  const reason = error instanceof ApiError ? error.body?.error.details?.find((d) => d.path === 'link')?.message : undefined;
  const refusal = reason ? REFUSALS[reason] : undefined;
  if (refusal) return <Page title={refusal[0]}><p>{refusal[1]}</p></Page>;
  return <Page title="The console could not open"><ErrorNotice error={error} /></Page>;
}

function Page({ title, children }: { title: string; children: ComponentChildren }) {
  useEffect(() => { document.title = `${title} · Catalog console`; }, [title]);
  return <main id="content" class="page-message"><h1>{title}</h1>{children}</main>;
}

const NAV = [
  ['imports', 'Imports', 'bulk_import:manage'], ['webhooks', 'Webhooks', 'webhooks:manage'], ['items', 'Items', 'catalog:read'],
  ['events', 'Events', 'catalog:read'], ['keys', 'Keys', 'keys:manage'], ['audit', 'Audit log', 'audit:read'],
] as const;

function Layout({ children }: { children: ComponentChildren }) {
  const current = session.value!;
  const section = route.value[0] ?? 'imports';
  const address = route.value.join('/');
  const first = useRef(true);
  // A new screen takes the focus, as a new page would: keyboard and screen-reader users start at its content.
  useEffect(() => {
    if (first.current) { first.current = false; return; }
    document.getElementById('content')?.focus();
  }, [address]);
  const readOnly = !current.scopes.some((scope) => scope !== 'catalog:read');
  const signOut = async () => {
    await call((opts) => api.endConsoleSession(opts)).catch(() => undefined);
    endSession('You signed out.');
  };
  return (
    <>
      <a class="skip" href="#content" onClick={(event) => { event.preventDefault(); document.getElementById('content')?.focus(); }}>Skip to content</a>
      <header class="top">
        <p class="brand">Catalog console <strong>{current.catalogName}</strong></p>
        <nav aria-label="Sections">
          <ul>
            {NAV.filter(([, , scope]) => can(scope)).map(([path, label]) => (
              <li key={path}><a href={href(path)} aria-current={section === path ? 'page' : undefined}>{label}</a></li>
            ))}
          </ul>
        </nav>
        <p class="who">
          {readOnly && <span class="badge muted">read-only</span>} Session ends <When at={current.expiresAt} />{' '}
          <button type="button" class="link" onClick={() => void signOut()}>Sign out</button>
        </p>
      </header>
      <main id="content" tabIndex={-1}>{children}</main>
    </>
  );
}

function Screen() {
  const [section = 'imports', id, sub, subId] = route.value;
  if (section === 'imports') return id ? <ImportScreen jobId={id} /> : <ImportsScreen />;
  if (section === 'webhooks') {
    if (id && sub === 'deliveries' && subId) return <DeliveryScreen webhookId={id} deliveryId={subId} />;
    return id ? <WebhookScreen webhookId={id} /> : <WebhooksScreen />;
  }
  if (section === 'items') return id && sub ? <ItemScreen externalSystem={id} externalId={sub} /> : <ItemsScreen />;
  if (section === 'events') return <EventsScreen resourceId={id} />;
  if (section === 'keys') return <KeysScreen />;
  if (section === 'audit') return <AuditScreen resourceType={id} resourceId={sub} />;
  return <p>There is no screen at this address. <a href={href('imports')}>Go to imports</a>.</p>;
}

function App() {
  if (linkToken && !session.value && !ended.value) return <Redeem token={linkToken} />;
  if (!session.value) {
    return (
      <Page title={ended.value ? 'The console session has ended' : 'Open the console from a link'}>
        <p>{ended.value ?? 'The console opens from a single-use link made by your platform. Ask there for a new one.'}</p>
      </Page>
    );
  }
  return <Layout><Screen /></Layout>;
}

const root = document.getElementById('console')!;
root.textContent = '';
render(<App />, root);
