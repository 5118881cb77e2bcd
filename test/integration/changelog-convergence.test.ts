// The item changelog converges: bulk bodies and single upserts raced against the ingestion of the images they name, the topic folded by key equals the API, item for item.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import type { Item, ItemPayload } from '../../generated/client.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { makeImage } from '../helpers/image-origin.ts';
import { readTopic } from '../helpers/kafka.ts';
import { SETTLE_MS, eventually, startMediaBed } from '../helpers/media.ts';
import type { MediaBed } from '../helpers/media.ts';

const FILE = import.meta.filename;
const IMAGES = 60;
const BULK_ITEMS = 200;
const SINGLE_ITEMS = 24;
// Downloads are held until the items are stored, far inside this timeout, then answered together.
const MEDIA_TIMEOUT_MS = 60_000;
let bed: MediaBed;
let release: () => void = () => undefined;
const released = new Promise<void>((resolve) => { release = resolve; });

before(async () => {
  bed = await startMediaBed(FILE, { MEDIA_TIMEOUT_MS: String(MEDIA_TIMEOUT_MS), MEDIA_RETRIES: '0' });
  const body = await makeImage('png', 24, 24);
  for (let n = 0; n < IMAGES; n++) {
    bed.origin.script(`/race/${n}.png`, (_req, res) => void released.then(() => res.writeHead(200, { 'content-type': 'image/png' }).end(body)));
  }
});

after(async () => {
  release();
  await bed?.close();
});

/** Item `i` in round `round`: it names three of the images, so its writes meet their ingestions. */
function item(i: number, round: number): ItemPayload {
  return {
    externalSystem: 'erp', externalId: `R-${i}`, name: `Item ${i} round ${round}`, price: round,
    media: [0, 1, 2].map((n) => ({ url: bed.origin.at(`/race/${(i + n * 7) % IMAGES}.png`), role: n === 0 ? 'primary' as const : 'gallery' as const, sortOrder: n })),
  };
}

/** The item as the changelog carries it: stored images' addresses expire, so records hold none. */
const asRecorded = (item: Item): Item => ({
  ...item, media: item.media.map((m) => ({ ...m, storedUrl: null, renditions: m.renditions.map((r) => ({ ...r, storedUrl: null })) })),
});

const pending = async () => (await bed.sql.query(`SELECT count(*)::int AS n FROM media_assets WHERE status = 'pending'`)).rows[0].n as number;

test('whatever commits in whatever order, the last changelog record of every item equals GET once the outbox drains', async () => {
  const opts = clientOptions(bed.service.url, bed.tenant.key);
  const write = async (round: number) => {
    const bodies = [0, 1].map((b) => api.bulkUpsertItems({ items: Array.from({ length: BULK_ITEMS / 2 }, (_, k) => item(b * 100 + k, round)) }, opts));
    const singles = Array.from({ length: SINGLE_ITEMS }, (_, s) => api.upsertItem(item(1000 + s, round), opts));
    for (const answer of await Promise.all(bodies)) {
      const { summary, results } = expectData(answer, 200);
      assert.equal(summary.failed, 0, JSON.stringify(results.find((r) => r.status === 'error')));
    }
    for (const answer of await Promise.all(singles)) assert.ok([200, 201].includes(answer.status), JSON.stringify(answer.data));
  };
  // Every image registered and its download waiting; then they all arrive while the items are written again and again.
  await write(0);
  release();
  let round = 1;
  do await write(round++);
  while (await pending() > 0 && round < 200);

  await eventually(async () => {
    const { rows } = await bed.sql.query(`SELECT (SELECT count(*) FROM media_assets WHERE status = 'pending')::int AS pending,
      (SELECT count(*) FROM outbox WHERE sent_at IS NULL)::int AS unsent`);
    return rows[0].pending === 0 && rows[0].unsent === 0 ? true : undefined;
  }, 'every image settled and the outbox drained', SETTLE_MS);

  const folded = new Map<string, Item | null>();
  for (const record of await readTopic([...bed.service.kafka.brokers], bed.service.kafka.topic(TOPICS.items))) {
    const [catalogId] = JSON.parse(record.key!) as [string, string, string];
    if (catalogId === bed.tenant.catalogId) folded.set(record.key!, record.value === null ? null : JSON.parse(record.value.toString('utf8')) as Item);
  }
  const ids = [...Array.from({ length: BULK_ITEMS }, (_, i) => i), ...Array.from({ length: SINGLE_ITEMS }, (_, s) => 1000 + s)];
  const differ: string[] = [];
  for (const i of ids) {
    const read = asRecorded(expectData(await api.getItem('erp', `R-${i}`, opts), 200));
    const recorded = folded.get(JSON.stringify([bed.tenant.catalogId, 'erp', `R-${i}`]));
    // What a record carries besides the item (the catalog it belongs to) is not compared.
    const { catalogId: _catalogId, ...stored } = (recorded ?? {}) as Item & { catalogId?: string };
    try {
      assert.deepEqual(stored, read);
    } catch {
      differ.push(`R-${i}: the changelog says ${JSON.stringify(recorded?.media.map((m) => m.status))}, GET ${JSON.stringify(read.media.map((m) => m.status))}`);
    }
  }
  assert.deepEqual(differ.slice(0, 5), [], `${differ.length} of ${ids.length} items differ between the changelog and the API after ${round} rounds`);
});
