// The catalog's event log, newest first, followed live: new events appear at the top as they happen.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { EventEnvelope, EventType } from '../generated/client.ts';
import { api, call } from './api.ts';
import { go } from './router.ts';
import { JsonView } from './components/json-view.tsx';
import { ErrorNotice } from './components/notice.tsx';
import { When } from './components/when.tsx';

const WINDOWS = [['15', 'the last 15 minutes'], ['60', 'the last hour'], ['1440', 'the last day'], ['10080', 'the last week']] as const;
const TYPES: EventType[] = [
  'item.created', 'item.updated', 'item.deleted', 'variant.created', 'variant.updated', 'variant.deleted', 'stock.adjusted',
  'media.ingested', 'media.ingestion_failed', 'import.completed', 'import.failed',
];
const MAX_SHOWN = 500;
const TAIL_MS = 2000;

export function EventsScreen({ resourceId }: { resourceId: string | undefined }) {
  useEffect(() => { document.title = 'Events · Catalog console'; }, []);
  const [minutes, setMinutes] = useState('60');
  const [type, setType] = useState<EventType | ''>('');
  const [live, setLive] = useState(true);
  const [events, setEvents] = useState<EventEnvelope[]>([]);
  const [error, setError] = useState<unknown>(undefined);
  const last = useRef<string | undefined>(undefined);
  const filters = { ...(type ? { $type: type } : {}), ...(resourceId ? { resourceId } : {}) };
  // The log is oldest first: read the window forwards, keep the newest MAX_SHOWN, show them reversed.
  const readFrom = async (start: { since?: string; after?: string }) => {
    const found: EventEnvelope[] = [];
    let cursor: string | undefined;
    do {
      const page = await call((opts) => api.listEvents({ limit: 100, ...start, ...filters, ...(cursor ? { cursor } : {}) }, opts));
      found.push(...page.events);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return found;
  };
  useEffect(() => {
    let stopped = false;
    last.current = undefined;
    setEvents([]);
    readFrom({ since: new Date(Date.now() - Number(minutes) * 60_000).toISOString() }).then((found) => {
      if (stopped) return;
      last.current = found.at(-1)?.id;
      setEvents(found.slice(-MAX_SHOWN).reverse());
      setError(undefined);
    }, setError);
    return () => { stopped = true; };
  }, [minutes, type, resourceId]);
  useEffect(() => {
    if (!live) return undefined;
    const timer = setInterval(() => {
      const start = last.current ? { after: last.current } : { since: new Date(Date.now() - Number(minutes) * 60_000).toISOString() };
      readFrom(start).then((found) => {
        if (found.length === 0) return;
        last.current = found.at(-1)?.id;
        setEvents((shown) => [...found.reverse(), ...shown].slice(0, MAX_SHOWN));
      }, setError);
    }, TAIL_MS);
    return () => clearInterval(timer);
  }, [live, minutes, type, resourceId]);
  return (
    <>
      <h1>Events{resourceId && <> about <code>{resourceId}</code></>}</h1>
      <div class="filters">
        <label>Since <select value={minutes} onChange={(e) => setMinutes((e.currentTarget as HTMLSelectElement).value)}>
          {WINDOWS.map(([value, label]) => <option key={value} value={value}>{label}</option>)}
        </select></label>
        <label>Type <select value={type} onChange={(e) => setType((e.currentTarget as HTMLSelectElement).value as EventType | '')}>
          <option value="">every type</option>
          {TYPES.map((value) => <option key={value} value={value}>{value}</option>)}
        </select></label>
        <label class="check"><input type="checkbox" checked={live} onChange={(e) => setLive((e.currentTarget as HTMLInputElement).checked)} /> Follow new events</label>
        {resourceId && <button type="button" class="link" onClick={() => go('events')}>Every resource</button>}
      </div>
      <ErrorNotice error={error} />
      <p role="status">{events.length === 0 ? 'No event in this window yet.' : `${events.length} event${events.length === 1 ? '' : 's'}, newest first.`}</p>
      <ol class="events" aria-label="Events, newest first">
        {events.map((event) => (
          <li key={event.id}>
            <details>
              <summary><strong>{event.type}</strong> <code>{event.resourceId}</code> <When at={event.createdAt} /></summary>
              <JsonView value={event} label={`Event ${event.id}`} />
            </details>
          </li>
        ))}
      </ol>
    </>
  );
}
