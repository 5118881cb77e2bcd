// An item's history as a timeline, newest first: what each version changed, field by field, who
// or what made it (a key's request, an import's line, a restore), and a restore of any version.
import { useState } from 'preact/hooks';
import type { ItemVersion } from '../generated/client.ts';
import { api, call, can, session } from './api.ts';
import { href } from './router.ts';
import { Diff } from './components/diff.tsx';
import { DoneNotice, ErrorNotice } from './components/notice.tsx';
import { usePages } from './components/pages.ts';
import { useLoad } from './components/use-load.ts';
import { StatusBadge } from './components/status-badge.tsx';
import { When } from './components/when.tsx';

type KeyNames = ReadonlyMap<string, string>;

/** A key as a person knows it: its label and prefix where this session may list keys, else the end of its id. */
function keyName(id: string | undefined, names: KeyNames): string {
  if (id === undefined) return 'an unknown key';
  if (id === session.value?.id) return 'this console session';
  return names.get(id) ?? `key …${id.slice(-8)}`;
}

function Source({ version, names }: { version: ItemVersion; names: KeyNames }) {
  const source = version.source;
  if (!source) return <span class="muted">source not recorded</span>;
  if (source.kind === 'import') {
    return <>import <a href={href('imports', source.importJobId ?? '')}>{(source.importJobId ?? '').slice(-8)}</a>, line {source.lineNumber}</>;
  }
  return (
    <>
      {source.restoredFromVersion !== undefined ? `restore of version ${source.restoredFromVersion} ` : ''}
      by {keyName(source.apiKeyId, names)}
      {source.requestId && <>, request <code>{source.requestId}</code></>}
      {source.idempotencyKey && <>, idempotency key <code>{source.idempotencyKey}</code></>}
    </>
  );
}

export function Versions({ externalSystem, externalId, restored }: { externalSystem: string; externalId: string; restored: () => void }) {
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const versions = usePages(async (cursor) => {
    const page = await call((opts) => api.listItemVersions(externalSystem, externalId, { limit: 20, cursor }, opts));
    return { rows: page.versions, nextCursor: page.nextCursor };
  }, [externalSystem, externalId]);
  const keys = useLoad(async (): Promise<KeyNames> => {
    if (!can('keys:manage')) return new Map();
    const list = await call((opts) => api.listKeys({ limit: 100 }, opts));
    return new Map(list.keys.map((key) => [key.id, `key ${key.label ? `"${key.label}" ` : ''}${key.prefix}…`]));
  }, []);
  const latest = versions.rows.reduce((max, version) => Math.max(max, version.version), 0);
  const restore = async (version: number) => {
    setError(undefined);
    setDone(undefined);
    try {
      const answer = await call((opts) => api.restoreItemVersion(externalSystem, externalId, version, opts));
      setDone(answer.outcome === 'unchanged' ? `Version ${version} is what the item already holds: nothing changed.` : `Version ${version} was restored as a new version.`);
      versions.reload();
      restored();
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <section aria-labelledby="history-heading">
      <h2 id="history-heading">History</h2>
      <p><a href={href('events', externalId)}>This item's events</a></p>
      <ErrorNotice error={versions.error ?? error} />
      {done && <DoneNotice>{done}</DoneNotice>}
      <ol class="timeline">
        {versions.rows.map((version) => (
          <li key={version.version}>
            <h3>Version {version.version} <StatusBadge status={version.kind} /> <When at={version.createdAt} /></h3>
            <p class="source"><Source version={version} names={keys.data ?? new Map()} /></p>
            <Diff changes={version.changes} caption={`What version ${version.version} changed`} />
            {can('catalog:write') && version.item && version.version !== latest && (
              <button type="button" onClick={() => void restore(version.version)}>Restore version {version.version}</button>
            )}
          </li>
        ))}
      </ol>
      {versions.more && <button type="button" onClick={versions.more}>Show older versions</button>}
    </section>
  );
}
