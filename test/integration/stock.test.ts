// Stock movements: only for items that track stock, exact on-hand under concurrency, idempotent retries.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData, expectStatus } from '../helpers/client.ts';
import { sqlClient } from '../helpers/database.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';

const FILE = import.meta.filename;
let service: TestService;
let tenant: Tenant;
let sql: Awaited<ReturnType<typeof sqlClient>>;
const opts = (headers: Record<string, string> = {}) => clientOptions(service.url, tenant.key, headers);

before(async () => {
  service = await startTestService(FILE);
  tenant = await service.newTenant();
  sql = await sqlClient(service.databaseUrl);
  expectData(await api.upsertItem({ externalSystem: 'wms', externalId: 'TRACKED', name: 'Tracked', trackStock: true }, opts()), 201);
  expectData(await api.upsertItem({ externalSystem: 'wms', externalId: 'PLAIN', name: 'Not tracked' }, opts()), 201);
});
after(async () => {
  await sql?.end();
  await service?.close();
});

test('a movement answers 201 with the movement and the new on-hand; the item shows it', async () => {
  const first = expectData(await api.createStockMovement('wms', 'TRACKED', { quantity: 10, reason: 'receipt', reference: 'PO-1' }, {}, opts()), 201);
  assert.equal(first.onHand, 10);
  assert.equal(first.movement.onHandAfter, 10);
  assert.equal(first.movement.reference, 'PO-1');
  const second = expectData(await api.createStockMovement('wms', 'TRACKED', { quantity: -3, reason: 'sale', occurredAt: '2026-01-02T03:04:05.678Z' }, {}, opts()), 201);
  assert.equal(second.onHand, 7);
  assert.equal(second.movement.occurredAt, '2026-01-02T03:04:05.678Z');
  assert.equal(expectData(await api.getItem('wms', 'TRACKED', opts()), 200).onHand, 7);
  // An upsert replaces the payload but keeps the stock: on-hand is not part of the payload.
  expectData(await api.upsertItem({ externalSystem: 'wms', externalId: 'TRACKED', name: 'Tracked, renamed', trackStock: true }, opts()), 200);
  assert.equal(expectData(await api.getItem('wms', 'TRACKED', opts()), 200).onHand, 7);
});

test('an item that does not track stock answers 422 unprocessable; a missing one 404; bad input 400', async () => {
  const refused = expectStatus(await api.createStockMovement('wms', 'PLAIN', { quantity: 1, reason: 'receipt' }, {}, opts()), 422);
  assert.equal(refused.error.code, 'unprocessable');
  assert.equal(Number((await sql.query("SELECT count(*) AS n FROM stock_movements m JOIN items i ON i.id = m.item_id WHERE i.external_id = 'PLAIN'")).rows[0].n), 0);
  expectStatus(await api.createStockMovement('wms', 'MISSING', { quantity: 1, reason: 'receipt' }, {}, opts()), 404);
  const zero = expectStatus(await api.createStockMovement('wms', 'TRACKED', { quantity: 0, reason: 'receipt' }, {}, opts()), 400);
  assert.equal(zero.error.details?.[0]?.path, 'quantity');
  expectStatus(await api.createStockMovement('wms', 'TRACKED', { quantity: 1, reason: 'theft' as 'sale' }, {}, opts()), 400);
  const readOnly = await service.newTenant({ scopes: ['catalog:read'] });
  expectStatus(await api.createStockMovement('wms', 'TRACKED', { quantity: 1, reason: 'receipt' }, {}, clientOptions(service.url, readOnly.key)), 403);
});

test('50 concurrent movements keep on-hand exact: each sees the total of those before it', async () => {
  expectData(await api.upsertItem({ externalSystem: 'wms', externalId: 'BUSY', name: 'Busy', trackStock: true }, opts()), 201);
  const answers = await Promise.all(Array.from({ length: 50 }, () =>
    api.createStockMovement('wms', 'BUSY', { quantity: 1, reason: 'receipt' }, {}, opts())));
  const afters = answers.map((a) => expectData(a, 201).movement.onHandAfter).sort((a, b) => a - b);
  // No lost update: the 50 movements saw 1, 2, … 50, each exactly once.
  assert.deepEqual(afters, Array.from({ length: 50 }, (_, i) => i + 1));
  assert.equal(expectData(await api.getItem('wms', 'BUSY', opts()), 200).onHand, 50);
  const { rows } = await sql.query("SELECT sum(m.quantity)::int AS total FROM stock_movements m JOIN items i ON i.id = m.item_id WHERE i.external_id = 'BUSY'");
  assert.equal(rows[0].total, 50);
});

test('the list is newest first with a cursor', async () => {
  expectData(await api.upsertItem({ externalSystem: 'wms', externalId: 'LISTED', name: 'Listed', trackStock: true }, opts()), 201);
  for (let i = 1; i <= 5; i += 1) {
    expectData(await api.createStockMovement('wms', 'LISTED', { quantity: i, reason: 'count' }, {}, opts()), 201);
  }
  const first = expectData(await api.listStockMovements('wms', 'LISTED', { limit: 3 }, opts()), 200);
  assert.deepEqual(first.movements.map((m) => m.quantity), [5, 4, 3]);
  const second = expectData(await api.listStockMovements('wms', 'LISTED', { limit: 3, cursor: first.nextCursor! }, opts()), 200);
  assert.deepEqual(second.movements.map((m) => m.quantity), [2, 1]);
  assert.equal(second.nextCursor, null);
});

test('Idempotency-Key: a repeat returns the first answer and moves stock once; another body is 409', async () => {
  expectData(await api.upsertItem({ externalSystem: 'wms', externalId: 'IDEM', name: 'Idem', trackStock: true }, opts()), 201);
  const key = `idem-${Date.now()}`;
  const body = { quantity: 4, reason: 'receipt' as const, reference: 'PO-77' };
  const first = expectData(await api.createStockMovement('wms', 'IDEM', body, { idempotencyKey: key }, opts()), 201);
  const repeats = await Promise.all(Array.from({ length: 5 }, () => api.createStockMovement('wms', 'IDEM', body, { idempotencyKey: key }, opts())));
  for (const repeat of repeats) assert.deepEqual(expectData(repeat, 201), first);
  assert.equal(expectData(await api.getItem('wms', 'IDEM', opts()), 200).onHand, 4);
  const clash = expectStatus(await api.createStockMovement('wms', 'IDEM', { ...body, quantity: 5 }, { idempotencyKey: key }, opts()), 409);
  assert.equal(clash.error.code, 'conflict');
  assert.equal(clash.error.details?.[0]?.path, 'Idempotency-Key');
  // Keys are per operation and path: the same key on another item is a different request.
  expectData(await api.upsertItem({ externalSystem: 'wms', externalId: 'IDEM-2', name: 'Idem 2', trackStock: true }, opts()), 201);
  assert.equal(expectStatus(await api.createStockMovement('wms', 'IDEM-2', body, { idempotencyKey: key }, opts()), 409).error.code, 'conflict');
  // A failed request does not use up its key.
  const failedKey = `idem-fail-${Date.now()}`;
  expectStatus(await api.createStockMovement('wms', 'PLAIN', body, { idempotencyKey: failedKey }, opts()), 422);
  expectData(await api.upsertItem({ externalSystem: 'wms', externalId: 'PLAIN', name: 'Now tracked', trackStock: true }, opts()), 200);
  expectData(await api.createStockMovement('wms', 'PLAIN', body, { idempotencyKey: failedKey }, opts()), 201);
});
