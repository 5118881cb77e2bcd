// Items: find one by its identity in the merchant's system, or list them by SKU, category, brand or tag.
import { useEffect, useState } from 'preact/hooks';
import { api, call } from './api.ts';
import { go, href } from './router.ts';
import { ErrorNotice } from './components/notice.tsx';
import { usePages } from './components/pages.ts';
import { When } from './components/when.tsx';

type Filters = { sku?: string; category?: string; brand?: string; tag?: string };
const FILTERS = [['sku', 'SKU'], ['category', 'Category'], ['brand', 'Brand'], ['tag', 'Tag']] as const;

export function ItemsScreen() {
  useEffect(() => { document.title = 'Items · Catalog console'; }, []);
  const [system, setSystem] = useState('');
  const [externalId, setExternalId] = useState('');
  const [draft, setDraft] = useState<Filters>({});
  const [filters, setFilters] = useState<Filters>({});
  const list = usePages(async (cursor) => {
    const page = await call((opts) => api.listItems({ limit: 50, cursor, ...filters }, opts));
    return { rows: page.items, nextCursor: page.nextCursor };
  }, [JSON.stringify(filters)]);
  const find = (event: Event) => {
    event.preventDefault();
    go('items', system.trim(), externalId.trim());
  };
  const filter = (event: Event) => {
    event.preventDefault();
    setFilters(Object.fromEntries(Object.entries(draft).filter(([, value]) => value !== undefined && value.trim() !== '')));
  };
  return (
    <>
      <h1>Items</h1>
      <div class="columns">
        <form class="panel" onSubmit={find} aria-labelledby="find-heading">
          <h2 id="find-heading">Find an item</h2>
          <label for="find-system">External system</label>
          <input id="find-system" type="text" required value={system} placeholder="erp" onInput={(e) => setSystem((e.currentTarget as HTMLInputElement).value)} />
          <label for="find-id">External id</label>
          <input id="find-id" type="text" required value={externalId} placeholder="SKU-0001" onInput={(e) => setExternalId((e.currentTarget as HTMLInputElement).value)} />
          <button type="submit">Open the item</button>
        </form>
        <form class="panel" onSubmit={filter} aria-labelledby="filter-heading">
          <h2 id="filter-heading">List items</h2>
          {FILTERS.map(([name, label]) => (
            <label key={name}>{label} <input type="text" value={draft[name] ?? ''} onInput={(e) => setDraft({ ...draft, [name]: (e.currentTarget as HTMLInputElement).value })} /></label>
          ))}
          <button type="submit">List matching items</button>
        </form>
      </div>
      <ErrorNotice error={list.error} />
      {list.rows.length === 0 && !list.loading ? <p>No item matches.</p> : (
        <table>
          <caption class="visually-hidden">Items, least recently updated first</caption>
          <thead><tr><th scope="col">Item</th><th scope="col">Name</th><th scope="col">SKU</th><th scope="col">Price</th><th scope="col">On hand</th><th scope="col">Updated</th></tr></thead>
          <tbody>
            {list.rows.map((item) => (
              <tr key={item.serviceId}>
                <td><a href={href('items', item.externalSystem, item.externalId)}>{item.externalSystem}/{item.externalId}</a></td>
                <td>{item.name}</td>
                <td>{item.sku ?? '—'}</td>
                <td class="number">{item.price ?? '—'}</td>
                <td class="number">{item.trackStock ? item.onHand : '—'}</td>
                <td><When at={item.updatedAt} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.more && <button type="button" onClick={list.more}>Show more items</button>}
    </>
  );
}
