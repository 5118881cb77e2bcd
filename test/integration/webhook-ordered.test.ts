// Ordered delivery per resource over real HTTP: a receiver that fails at random still sees each item's events in order, and one stuck item does not stall the others.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as api from '../../generated/client.ts';
import { clientOptions, expectData } from '../helpers/client.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receipt, Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
// The stuck item's attempt is held open this long: far longer than the other items' deliveries take.
const HOLD_TIMEOUT_MS = 60_000;
let service: TestService;
let receiver: Receiver;
let tenant: Tenant;
const opts = () => clientOptions(service.url, tenant.key);

before(async () => {
  receiver = await startReceiver();
  service = await startTestService(FILE, {
    WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_DELAYS_MS: '0,20,20,20,20,20,20,20', WEBHOOK_TIMEOUT_MS: String(HOLD_TIMEOUT_MS),
  });
  tenant = await service.newTenant();
});
after(async () => {
  receiver?.releaseHeld();
  await service?.close();
  await receiver?.close();
});

async function subscribe(path: string) {
  const created = expectData(await api.createWebhook({ url: receiver.url(path), events: ['item.created', 'item.updated'], ordered: true }, {}, opts()), 201);
  assert.equal(created.ordered, true);
  receiver.secrets(path, [created.secret]);
  return created;
}

/** The version an event carries: each write names its item `<id> v<n>`. */
const versionOf = (receipt: Receipt) => Number(/ v(\d+)$/.exec(String(receipt.event.data.name))?.[1]);

/** Writes versions 1…n of each item, one after the other per item, the items side by side. */
async function writeVersions(ids: readonly string[], n: number) {
  await Promise.all(ids.map(async (id) => {
    for (let v = 1; v <= n; v += 1) expectData(await api.upsertItem({ externalSystem: 'erp', externalId: id, name: `${id} v${v}` }, opts()), v === 1 ? 201 : 200);
  }));
}

test('a receiver failing at random sees every attempt of an item in the order its events happened', async () => {
  await subscribe('/ordered');
  // Each event fails at random on its first three attempts (then succeeds, so none is exhausted).
  const tries = new Map<string, number>();
  receiver.script('/ordered', (receipt) => {
    const n = (tries.get(receipt.event.id) ?? 0) + 1;
    tries.set(receipt.event.id, n);
    return n <= 3 && Math.random() < 0.4 ? { status: 500 } : { status: 200 };
  });
  const ids = Array.from({ length: 8 }, (_, i) => `ORD-${i}`);
  const versions = 8;
  await writeVersions(ids, versions);
  const delivered = (receipts: Receipt[], id: string) => new Set(receipts.filter((r) => r.path === '/ordered' && r.event.resourceId === id).map(versionOf));
  await receiver.waitFor('every version of every item', (all) => ids.every((id) => delivered(all, id).size === versions), 120_000);
  const failures = [...tries.values()].filter((n) => n > 1).length;
  assert.ok(failures > 0, 'the receiver failed some attempts');
  for (const id of ids) {
    const seen = receiver.receipts('/ordered').filter((r) => r.event.resourceId === id).map(versionOf);
    // Retries of one event come together; the next event only once it was delivered.
    assert.deepEqual(seen, [...seen].sort((a, b) => a - b), `${id}: attempts in the order ${seen.join(', ')}`);
  }
});

test('one item stuck at the receiver holds back only its own events', async () => {
  await subscribe('/stuck');
  let held = false;
  receiver.script('/stuck', (receipt) => {
    if (held || receipt.event.resourceId !== 'STUCK') return { status: 200 };
    held = true;
    return { hold: true };
  });
  await writeVersions(['STUCK', 'FREE'], 3);
  await receiver.waitFor('all of FREE', (all) => all.filter((r) => r.path === '/stuck' && r.event.resourceId === 'FREE').length === 3, HOLD_TIMEOUT_MS / 2);
  assert.deepEqual(receiver.receipts('/stuck').filter((r) => r.event.resourceId === 'FREE').map(versionOf), [1, 2, 3]);
  assert.deepEqual(receiver.receipts('/stuck').filter((r) => r.event.resourceId === 'STUCK').map(versionOf), [1], 'STUCK v2 waits for v1');
  // The held attempt fails (the connection drops); its retry succeeds and lets v2 and v3 go, in order.
  receiver.releaseHeld();
  await receiver.waitFor('the rest of STUCK', (all) => all.filter((r) => r.path === '/stuck' && r.event.resourceId === 'STUCK' && versionOf(r) === 3).length === 1, 60_000);
  assert.deepEqual(receiver.receipts('/stuck').filter((r) => r.event.resourceId === 'STUCK').map(versionOf), [1, 1, 2, 3]);
});
