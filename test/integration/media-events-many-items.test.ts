// Media events stay small whatever their image's number of items: at the broker's default record size limit, nothing is parked and every item's changelog record is published.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { makeImage } from '../helpers/image-origin.ts';
import { readTopic } from '../helpers/kafka.ts';
import { SETTLE_MS, eventually, settledItem, startMediaBed } from '../helpers/media.ts';
import type { MediaBed } from '../helpers/media.ts';
import type { Tenant } from '../helpers/service.ts';

const FILE = import.meta.filename;
const ITEMS_NAMING_ONE_IMAGE = 24_000;
// This file's topics are its own and keep the broker's default max.message.bytes (1 MB): no test here changes it.
let bed: MediaBed;
let operator: Tenant;

before(async () => {
  bed = await startMediaBed(FILE);
  operator = await bed.service.newTenant({ scopes: ['admin'] });
});

after(async () => {
  await bed?.close();
});

const unsent = async () => (await bed.sql.query('SELECT count(*)::int AS n FROM outbox WHERE sent_at IS NULL')).rows[0].n as number;

test(`an image named by ${ITEMS_NAMING_ONE_IMAGE} items: its media events list the first 100 and count them all; nothing is parked and every item's record is published`, async () => {
  const opts = clientOptions(bed.service.url, bed.tenant.key);
  bed.origin.serve('/shared.png', { body: await makeImage('png', 40, 40, 1), etag: '"v1"' });
  const media = [{ url: bed.origin.at('/shared.png'), role: 'primary' as const, sortOrder: 0 }];
  for (let from = 0; from < ITEMS_NAMING_ONE_IMAGE; from += 1000) {
    const items = Array.from({ length: 1000 }, (_, k) => ({ externalSystem: 'erp', externalId: `M-${String(from + k).padStart(5, '0')}`, name: 'Mug', media }));
    assert.equal(expectData(await api.bulkUpsertItems({ items }, opts), 200).summary.created, 1000);
  }
  const first = await settledItem(bed.service.url, bed.tenant.key, 'M-00000');
  assert.equal(first.media[0]!.status, 'ingested');
  // New bytes at the same address: the refresh reports every item again.
  bed.origin.serve('/shared.png', { body: await makeImage('png', 40, 40, 2), etag: '"v2"' });
  const assetId = first.media[0]!.assetId!;
  expectStatus(await api.refreshMediaAsset(assetId, opts), 202);
  const sourceUrlHash = first.media[0]!.sourceUrlHash;
  const ingested = await eventually(async () => {
    const { rows } = await bed.sql.query(`SELECT payload FROM outbox_events WHERE topic = 'catalog.events.v1' AND type = 'media.ingested'
      AND payload::jsonb ->> 'catalogId' = $1 ORDER BY batch_id, ord`, [bed.tenant.catalogId]);
    return rows.length >= 2 ? JSON.parse(rows.at(-1)!.payload) : undefined;
  }, 'the refresh\'s media.ingested', 2 * SETTLE_MS);
  assert.equal(ingested.data.itemCount, ITEMS_NAMING_ONE_IMAGE);
  assert.deepEqual(ingested.data.items, Array.from({ length: 100 }, (_, k) => ({ externalSystem: 'erp', externalId: `M-${String(k).padStart(5, '0')}` })));
  assert.ok(Buffer.byteLength(JSON.stringify(ingested)) < 100_000);

  await eventually(async () => (await unsent()) === 0 || undefined, 'the outbox to drain', 2 * SETTLE_MS);
  assert.deepEqual(expectData(await api.listParkedRecords({ includeResent: true }, clientOptions(bed.service.url, operator.key)), 200).records, []);
  const records = await readTopic([...bed.service.kafka.brokers], bed.service.kafka.topic(TOPICS.items), 2 * SETTLE_MS);
  const recordedAfterRefresh = records.filter((r) => r.headers['event-id'] === ingested.id);
  assert.equal(recordedAfterRefresh.length, ITEMS_NAMING_ONE_IMAGE, 'one changelog record per item, with the event\'s id');

  // The API pages through every item naming the image.
  let listed = 0;
  let cursor: string | undefined;
  do {
    const page = expectData(await api.listItems({ sourceUrlHash, limit: 200, ...(cursor ? { cursor } : {}) }, opts), 200);
    listed += page.items.length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  assert.equal(listed, ITEMS_NAMING_ONE_IMAGE);
});
