// The changelog record an item event's outbox row stands for: the event's item with its catalog, cut from its bytes, whatever the item holds; and the headers both carry.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordHeaders } from '../../domain/events/outbox.ts';
import type { OutboxRecord } from '../../domain/events/outbox.ts';
import { itemRecordOf } from '../../domain/items/changelog.ts';

const CATALOG = '0192f5e0-1a2b-7c3d-8e4f-5a6b7c8d9e0f';
// Markers the cut looks for, inside the strings and keys of an item: they must not confuse it.
const item = {
  serviceId: '0192f5e4-7b3a-7c1d-9e2f-3a4b5c6d7e8f', externalSystem: 'erp', externalId: 'X,"data":{"serviceId":1}',
  name: ',"previousContentHash":"', metadata: { data: { previousContentHash: 'x' }, '","changedFields":[': 1 }, contentHash: 'c'.repeat(64),
};
const row = (type: string, data: object, resourceId = item.externalId): OutboxRecord => ({
  row: '1', lane: 0, event_id: '0192f620-5e6f-7a7b-9c8d-9e0f1a2b3c4d', topic: 'catalog.events.v1', key: JSON.stringify([CATALOG, 'erp', resourceId]), catalog_id: CATALOG, type,
  committed_at: '1795435200123', traceparent: null,
  payload: JSON.stringify({ id: '0192f620-5e6f-7a7b-9c8d-9e0f1a2b3c4d', type, catalogId: CATALOG, resourceId, createdAt: '2026-11-21T12:00:00.123Z', data }),
});

test('item.created and item.updated give the item with its catalogId first, byte for byte; item.deleted a tombstone', () => {
  const record = JSON.stringify({ catalogId: CATALOG, ...item });
  assert.equal(itemRecordOf(row('item.created', item))?.value, record);
  const updated = row('item.updated', { ...item, previousContentHash: 'p'.repeat(64), changedFields: ['name'] });
  assert.equal(itemRecordOf(updated)?.value, record);
  assert.deepEqual(itemRecordOf(row('item.deleted', item)), { value: null });
});

test("item.updated's previousAttributes, last and printed by jsonb (a space after each colon), never look like the cut's marker", () => {
  const updated = row('item.updated', { ...item, previousContentHash: 'p'.repeat(64), changedFields: ['metadata'] });
  const attributes = '{"metadata": {"a": 1, "previousContentHash": "x", ",\\"previousContentHash\\":\\"": 2}}';
  const payload = `${updated.payload.slice(0, -2)},"previousAttributes":${attributes}}}`;
  assert.doesNotThrow(() => JSON.parse(payload));
  assert.equal(itemRecordOf({ ...updated, payload })?.value, JSON.stringify({ catalogId: CATALOG, ...item }));
});

test('other events, work messages and events written before events carried the item give nothing', () => {
  assert.equal(itemRecordOf(row('stock.adjusted', { externalId: 'X', onHand: 1 })), undefined);
  assert.equal(itemRecordOf({ ...row('item.created', item), catalog_id: null }), undefined);
  assert.equal(itemRecordOf({ ...row('item.deleted', item), key: item.externalId }), undefined, 'keyed by the bare externalId, as before #19');
  assert.equal(itemRecordOf(row('item.created', { externalId: 'X', externalSystem: 'erp', serviceId: item.serviceId, sku: null })), undefined);
  assert.equal(itemRecordOf(row('item.updated', { externalId: 'X', externalSystem: 'erp', serviceId: item.serviceId, sku: null, contentHash: item.contentHash })), undefined);
});

test('a changelog record carries the headers of its event; one appended apart takes its catalog from its key', () => {
  const event = { 'event-type': 'item.created', 'event-id': row('item.created', item).event_id, 'catalog-id': CATALOG, 'content-type': 'application/json', 'schema-version': '1' };
  assert.deepEqual(recordHeaders(row('item.created', item)), event);
  const appended: OutboxRecord = { ...row('stock.adjusted', item), topic: 'catalog.items.v1', catalog_id: null, payload: JSON.stringify({ catalogId: CATALOG, ...item }) };
  assert.deepEqual(recordHeaders(appended), { ...event, 'event-type': 'stock.adjusted' });
  assert.deepEqual(recordHeaders({ ...appended, topic: 'catalog.media.v1', key: 'f'.repeat(64), type: null }), { 'event-id': event['event-id'] }, 'a work message');
});
