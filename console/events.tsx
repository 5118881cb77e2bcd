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
const PAGE = 100;
const MAX_SHOWN = 2000;
const TAIL_MS = 2000;

export function EventsScreen({ resourceId }: { resourceId: string | undefined }) {
  useEffect(() => { document.title = 'Events · Catalog console'; }, []);
  const [minutes, setMinutes] = useState('60');
  const [type, setType] = useState<EventType | ''>('');
  const [live, setLive] = useState(true);
  const [events, setEvents] = useState<EventEnvelope[]>([]);
  const [older, setOlder] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const newest = useRef<string | undefined>(undefined);
  const filters = { ...(type ? { $type: type } : {}), ...(resourceId ? { resourceId } : {}) };
  const since = () => new Date(Date.now() - Number(minutes) * 60_000).toISOString();
  // Newest first, a page at a time going back; the tail reads forwards from the newest shown.
  const page = (cursor: string | undefined) => call((opts) => api.listEvents({ limit: PAGE, order: 'desc', since: since(), ...filters, ...(cursor ? { cursor } : {}) }, opts));
  useEffect(() => {
    let stopped = false;
    newest.current = undefined;
    setEvents([]);
    page(undefined).then((first) => {
      if (stopped) return;
      newest.current = first.events[0]?.id;
      setEvents(first.events);
      setOlder(first.nextCursor ?? undefined);
      setError(undefined);
    }, setError);
    return () => { stopped = true; };
  }, [minutes, type, resourceId]);
  useEffect(() => {
    if (!live) return undefined;
    const timer = setInterval(() => {
      const start = newest.current ? { after: newest.current } : { since: since() };
      call((opts) => api.listEvents({ limit: PAGE, ...start, ...filters }, opts)).then((fresh) => {
        if (fresh.events.length === 0) return;
        newest.current = fresh.events.at(-1)!.id;
        setEvents((shown) => {
          const all = [...fresh.events.toReversed(), ...shown];
          // A long tail of a busy catalog keeps the newest; older ones are read again by narrowing the window.
          if (all.length <= MAX_SHOWN) return all;
          setOlder(undefined);
          return all.slice(0, MAX_SHOWN);
        });
      }, setError);
    }, TAIL_MS);
    return () => clearInterval(timer);
  }, [live, minutes, type, resourceId]);
  const showOlder = () => {
    page(older).then((more) => {
      setEvents((shown) => [...shown, ...more.events]);
      setOlder(more.nextCursor ?? undefined);
    }, setError);
  };
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
      <p role="status">{events.length === 0 ? 'No event in this window yet.' : `${events.length} event${events.length === 1 ? '' : 's'} shown, newest first.`}</p>
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
      {older && <button type="button" onClick={showOlder}>Show older events</button>}
    </>
  );
}
