// One item: its current state, its images and their states, its stock movements and its history.
import { useEffect } from 'preact/hooks';
import type { ItemMedia } from '../generated/client.ts';
import { api, call } from './api.ts';
import { href } from './router.ts';
import { JsonView } from './components/json-view.tsx';
import { ErrorNotice } from './components/notice.tsx';
import { usePages } from './components/pages.ts';
import { StatusBadge } from './components/status-badge.tsx';
import { useLoad } from './components/use-load.ts';
import { When } from './components/when.tsx';
import { Versions } from './versions.tsx';

function Thumbnail({ media, name }: { media: ItemMedia; name: string }) {
  const smallest = [...media.renditions].sort((a, b) => a.width - b.width)[0];
  return (
    <figure class="media">
      {smallest?.storedUrl
        ? <img src={smallest.storedUrl} width={smallest.width} height={smallest.height} alt={`${name}, ${media.role} image ${media.sortOrder + 1}`} />
        : <div class="no-image">no rendition</div>}
      <figcaption><StatusBadge status={media.status} /> {media.role}{media.failure && <>: {media.failure.message}</>}</figcaption>
    </figure>
  );
}

function StockMovements({ system, id }: { system: string; id: string }) {
  const movements = usePages(async (cursor) => {
    const page = await call((opts) => api.listStockMovements(system, id, { limit: 20, cursor }, opts));
    return { rows: page.movements, nextCursor: page.nextCursor };
  }, [system, id]);
  if (movements.rows.length === 0) return <ErrorNotice error={movements.error} />;
  return (
    <section aria-labelledby="stock-heading">
      <h2 id="stock-heading">Stock movements</h2>
      <table>
        <caption class="visually-hidden">Stock movements</caption>
        <thead><tr><th scope="col">When</th><th scope="col">Quantity</th><th scope="col">Reason</th><th scope="col">Reference</th><th scope="col">On hand after</th></tr></thead>
        <tbody>
          {movements.rows.map((movement) => (
            <tr key={movement.id}>
              <td><When at={movement.occurredAt} /></td><td class="number">{movement.quantity}</td><td>{movement.reason}</td>
              <td>{movement.reference ?? '—'}</td><td class="number">{movement.onHandAfter}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {movements.more && <button type="button" onClick={movements.more}>Show more movements</button>}
    </section>
  );
}

export function ItemScreen({ externalSystem, externalId }: { externalSystem: string; externalId: string }) {
  const item = useLoad(() => call((opts) => api.getItem(externalSystem, externalId, opts)), [externalSystem, externalId]);
  useEffect(() => { document.title = `${externalId} · Items · Catalog console`; }, [externalId]);
  const current = item.data;
  return (
    <>
      <p><a href={href('items')}>← Items</a></p>
      <h1>{current?.name ?? externalId} <span class="muted">{externalSystem}/{externalId}</span></h1>
      <ErrorNotice error={item.error} />
      {current && (
        <>
          <dl class="facts">
            <dt>SKU</dt><dd>{current.sku ?? '—'}</dd>
            <dt>Price</dt><dd>{current.price ?? '—'}</dd>
            <dt>On hand</dt><dd>{current.trackStock ? current.onHand : 'not tracked'}</dd>
            <dt>Updated</dt><dd><When at={current.updatedAt} /></dd>
          </dl>
          {current.media.length > 0 && (
            <section aria-labelledby="media-heading">
              <h2 id="media-heading">Images</h2>
              <div class="media-list">{current.media.map((media) => <Thumbnail key={media.sourceUrlHash} media={media} name={current.name} />)}</div>
            </section>
          )}
          <details><summary>The item as the API answers it</summary><JsonView value={current} label="The item's JSON" /></details>
          {current.trackStock && <StockMovements system={externalSystem} id={externalId} />}
        </>
      )}
      <Versions externalSystem={externalSystem} externalId={externalId} restored={() => void item.reload()} />
    </>
  );
}
