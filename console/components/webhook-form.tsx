// A webhook's settings as a form: address, event types, per-resource ordering, a pace, and a filter
// built from conditions (all must hold) and shown in the filter language that the API stores.
import { useState } from 'preact/hooks';
import type { EventSubscription, Webhook, WebhookFilter, WebhookRateLimit } from '../../generated/client.ts';
import { ErrorNotice } from './notice.tsx';

const EVENT_TYPES: EventSubscription[] = [
  'item.created', 'item.updated', 'item.deleted', 'variant.created', 'variant.updated', 'variant.deleted',
  'stock.adjusted', 'media.ingested', 'media.ingestion_failed', 'import.completed', 'import.failed',
];
const TESTS = { equals: 'equals', in: 'is one of (comma-separated)', exists: 'is present', absent: 'is absent' } as const;
type Test = keyof typeof TESTS;
interface Condition { field: string; test: Test; value: string }

export interface WebhookSettings {
  url: string;
  description: string | null;
  events: EventSubscription[];
  ordered: boolean;
  filter: WebhookFilter | null;
  rateLimit: WebhookRateLimit | null;
}

// A typed value from what was typed: numbers, true/false and null as JSON, anything else as text.
function valueOf(text: string): string | number | boolean | null {
  const trimmed = text.trim();
  if (/^(-?\d+(\.\d+)?|true|false|null)$/.test(trimmed)) return JSON.parse(trimmed) as number | boolean | null;
  return trimmed;
}

function filterOf(conditions: Condition[]): WebhookFilter | null {
  const tests = conditions.filter((c) => c.field.trim() !== '').map((c): WebhookFilter => {
    const field = c.field.trim();
    if (c.test === 'exists' || c.test === 'absent') return { field, exists: c.test === 'exists' };
    if (c.test === 'in') return { field, in: c.value.split(',').map(valueOf) };
    return { field, equals: valueOf(c.value) };
  });
  if (tests.length === 0) return null;
  return tests.length === 1 ? tests[0]! : { all: tests };
}

/** The conditions of a filter the form can show (a condition, or `all` of them); undefined for any other shape. */
function conditionsOf(filter: WebhookFilter | null | undefined): Condition[] | undefined {
  if (!filter) return [];
  const list = filter.all ?? [filter];
  const conditions: Condition[] = [];
  for (const test of list) {
    if (!test.field) return undefined;
    if (test.exists !== undefined) conditions.push({ field: test.field, test: test.exists ? 'exists' : 'absent', value: '' });
    else if (test.in) conditions.push({ field: test.field, test: 'in', value: test.in.map(String).join(', ') });
    else if (test.equals !== undefined) conditions.push({ field: test.field, test: 'equals', value: String(test.equals) });
    else return undefined;
  }
  return conditions;
}

export function WebhookForm({ initial, submitLabel, onSubmit }: { initial?: Webhook; submitLabel: string; onSubmit: (settings: WebhookSettings) => Promise<void> }) {
  const [url, setUrl] = useState(initial?.url ?? '');
  const [description, setDescription] = useState(initial?.description ?? '');
  const [events, setEvents] = useState<EventSubscription[]>(initial?.events ?? ['item.created', 'item.updated', 'item.deleted']);
  const [ordered, setOrdered] = useState(initial?.ordered ?? false);
  const [paced, setPaced] = useState(Boolean(initial?.rateLimit));
  const [perSecond, setPerSecond] = useState(String(initial?.rateLimit?.perSecond ?? ''));
  const [maxInFlight, setMaxInFlight] = useState(String(initial?.rateLimit?.maxInFlight ?? ''));
  const shown = conditionsOf(initial?.filter);
  const [conditions, setConditions] = useState<Condition[]>(shown ?? []);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  // A filter the form cannot show (any/not) is kept as it is unless the person builds a new one.
  const [keptFilter, setKeptFilter] = useState<WebhookFilter | null | undefined>(shown ? undefined : initial?.filter);
  const filter = keptFilter !== undefined ? keptFilter : filterOf(conditions);
  const change = (index: number, patch: Partial<Condition>) => setConditions(conditions.map((c, i) => (i === index ? { ...c, ...patch } : c)));
  const every = events.includes('*');
  const toggle = (type: EventSubscription, on: boolean) => setEvents(on ? [...events.filter((e) => e !== type), type] : events.filter((e) => e !== type));
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      // The API checks the numbers (a 400 names the field); the form only reads them.
      const rateLimit = paced ? { perSecond: Number(perSecond), ...(maxInFlight.trim() === '' ? {} : { maxInFlight: Number(maxInFlight) }) } : null;
      await onSubmit({ url, description: description.trim() === '' ? null : description, events, ordered, filter, rateLimit });
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="panel" onSubmit={(event) => void submit(event)}>
      <label for="webhook-url">Endpoint address</label>
      <input id="webhook-url" type="url" required value={url} placeholder="https://shop.example/hooks/catalog" onInput={(e) => setUrl((e.currentTarget as HTMLInputElement).value)} />
      <label for="webhook-description">Description</label>
      <input id="webhook-description" type="text" maxLength={500} value={description} onInput={(e) => setDescription((e.currentTarget as HTMLInputElement).value)} />
      <fieldset>
        <legend>Events</legend>
        <label class="check"><input type="checkbox" checked={every} onChange={(e) => toggle('*', (e.currentTarget as HTMLInputElement).checked)} /> Every event type</label>
        <div class="event-types">
          {EVENT_TYPES.map((type) => (
            <label class="check" key={type}><input type="checkbox" disabled={every} checked={every || events.includes(type)} onChange={(e) => toggle(type, (e.currentTarget as HTMLInputElement).checked)} /> {type}</label>
          ))}
        </div>
      </fieldset>
      <label class="check"><input type="checkbox" checked={ordered} onChange={(e) => setOrdered((e.currentTarget as HTMLInputElement).checked)} /> Deliver each item's events in order (the next waits for the previous)</label>
      <fieldset>
        <legend>Pace</legend>
        <label class="check"><input type="checkbox" checked={paced} onChange={(e) => setPaced((e.currentTarget as HTMLInputElement).checked)} /> Limit how fast deliveries go to this endpoint</label>
        {paced && <>
          <label for="webhook-per-second">Deliveries a second (0.1 is one every 10 seconds)</label>
          <input id="webhook-per-second" type="number" required min="0.001" max="10000" step="any" value={perSecond} onInput={(e) => setPerSecond((e.currentTarget as HTMLInputElement).value)} />
          <label for="webhook-max-in-flight">At most this many at once (optional)</label>
          <input id="webhook-max-in-flight" type="number" min="1" max="1000" step="1" value={maxInFlight} onInput={(e) => setMaxInFlight((e.currentTarget as HTMLInputElement).value)} />
        </>}
        <p class="hint">Deliveries waiting their turn use none of their 8 attempts. Whatever the pace, a 429 from the endpoint pauses it for its Retry-After.</p>
      </fieldset>
      <fieldset>
        <legend>Filter: only events where all of these hold</legend>
        {keptFilter !== undefined && keptFilter !== null && (
          <p>This webhook's filter uses <code>any</code> or <code>not</code>, which this form does not build; it is kept as shown below. <button type="button" class="link" onClick={() => setKeptFilter(undefined)}>Replace it with conditions</button></p>
        )}
        {keptFilter === undefined && conditions.map((condition, index) => (
          <div class="condition" key={index}>
            <label>Field <input type="text" value={condition.field} placeholder="data.brand.name" onInput={(e) => change(index, { field: (e.currentTarget as HTMLInputElement).value })} /></label>
            <label>Test <select value={condition.test} onChange={(e) => change(index, { test: (e.currentTarget as HTMLSelectElement).value as Test })}>
              {Object.entries(TESTS).map(([value, label]) => <option key={value} value={value}>{label}</option>)}
            </select></label>
            {(condition.test === 'equals' || condition.test === 'in') && (
              <label>Value <input type="text" value={condition.value} onInput={(e) => change(index, { value: (e.currentTarget as HTMLInputElement).value })} /></label>
            )}
            <button type="button" class="link" onClick={() => setConditions(conditions.filter((_, i) => i !== index))}>Remove condition {index + 1}</button>
          </div>
        ))}
        {keptFilter === undefined && <button type="button" onClick={() => setConditions([...conditions, { field: '', test: 'equals', value: '' }])}>Add a condition</button>}
        <p class="hint">Fields: <code>type</code>, <code>resourceId</code>, <code>changedFields</code>, or <code>data.</code> and a path in the event (<code>data.brand.name</code>, <code>data.previousAttributes.price</code>).</p>
        <pre class="json" tabIndex={0} role="region" aria-label="The filter in the filter language">{filter ? JSON.stringify(filter, null, 2) : 'No filter: every event of the chosen types.'}</pre>
      </fieldset>
      <ErrorNotice error={error} />
      <button type="submit" disabled={busy}>{submitLabel}</button>
    </form>
  );
}
