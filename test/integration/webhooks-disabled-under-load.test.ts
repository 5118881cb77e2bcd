// A webhook driven to disabled while several keys' requests flow: every request answers as it should before, during and after, under either runtime.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as client from '../../generated/client.ts';
import { clientOptions } from '../helpers/client.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const FILE = import.meta.filename;
// Traffic goes on this long once the owner's notice is out: the requests that used to fail came right after it.
const TRAFFIC_AFTER_NOTICE_MS = 3000;
// A guard so a webhook that never gets disabled fails the test instead of hanging it.
const DISABLE_DEADLINE_MS = 120_000;

let service: TestService;
let receiver: Receiver;

before(async () => {
  receiver = await startReceiver();
  receiver.script('/down', () => ({ status: 503 }));
  // No SMTP_URL: the notice is composed by nodemailer, loaded on first use, and written to the data folder.
  service = await startTestService(FILE, {
    WEBHOOK_ALLOW_HTTP: 'true',
    OUTBOUND_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_DELAYS_MS: '0,20,20,20,20,20,20,20',
    WEBHOOK_DISABLE_AFTER: '3',
  });
});

after(async () => {
  await service?.close();
  await receiver?.close();
});

type Kind = 'upsert' | 'read missing' | 'stock on untracked' | 'revoked key' | 'wrong method';
const EXPECTED: Record<Kind, number[]> = {
  upsert: [200, 201],
  'read missing': [404],
  'stock on untracked': [422],
  'revoked key': [401],
  'wrong method': [405],
};

// Requests with a revoked key count against the client address's limit for requests without a
// valid key (100 a minute): the flows share fewer than that, so each is answered 401, not 429.
let revokedBudget = 60;

/** One key's requests, one at a time, until `stop()`: each answer is checked against what its kind must answer. */
function traffic(tenant: Tenant, revoked: Tenant, n: number) {
  const api = clientOptions(service.url, tenant.key);
  const wrong: string[] = [];
  const counts = new Map<Kind, number>();
  let stopped = false;
  let i = 0;
  const one = async (): Promise<[Kind, number, unknown]> => {
    let kind = (['upsert', 'read missing', 'stock on untracked', 'revoked key', 'wrong method'] as const)[i % 5]!;
    if (kind === 'revoked key' && (revokedBudget -= 1) < 0) kind = 'read missing';
    const id = `K${n}-${i % 7}`;
    i += 1;
    switch (kind) {
      case 'upsert': {
        const answer = await client.upsertItem({ externalSystem: 'erp', externalId: id, name: `Item ${id} #${i}`, price: i }, api);
        return [kind, answer.status, answer.data];
      }
      case 'read missing': {
        const answer = await client.getItem('erp', `missing-${i}`, api);
        return [kind, answer.status, answer.data];
      }
      case 'stock on untracked': {
        const answer = await client.createStockMovement('erp', `K${n}-0`, { quantity: 1, reason: 'receipt' }, {}, api);
        return [kind, answer.status, answer.data];
      }
      case 'revoked key': {
        const answer = await client.listItems({}, clientOptions(service.url, revoked.key));
        return [kind, answer.status, answer.data];
      }
      case 'wrong method': {
        const response = await fetch(`${service.url}/api/v1/catalog/items/upsert`, { method: 'GET', headers: { authorization: `Bearer ${tenant.key}` } });
        return [kind, response.status, await response.text()];
      }
    }
  };
  const done = (async () => {
    while (!stopped) {
      const [kind, status, body] = await one();
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      if (!EXPECTED[kind].includes(status)) wrong.push(`${kind}: ${status} ${JSON.stringify(body).slice(0, 300)}`);
    }
  })();
  return {
    wrong,
    counts,
    async stop() {
      stopped = true;
      await done;
    },
  };
}

test('while a webhook exhausts its deliveries and is disabled, with its owner told, requests of every key answer as before', async () => {
  const owner = await service.newTenant({ tier: 'enterprise' });
  // Enterprise keys: their flows stay far below the rate limit however fast the machine answers.
  const others = [await service.newTenant({ tier: 'enterprise' }), await service.newTenant({ tier: 'enterprise' })];
  const revoked = await service.newTenant();
  await service.orm.em.fork().getConnection().execute('update api_keys set revoked_at = now() where id = ?', [revoked.keyId]);
  // Items exist before the traffic, so "stock on untracked" is refused for the reason it names.
  for (const [n, tenant] of [owner, ...others].entries()) {
    assert.equal((await client.upsertItem({ externalSystem: 'erp', externalId: `K${n}-0`, name: 'first' }, clientOptions(service.url, tenant.key))).status, 201);
  }
  const hook = await client.createWebhook({ url: receiver.url('/down'), events: ['*'] }, {}, clientOptions(service.url, owner.key));
  assert.equal(hook.status, 201);
  if (hook.status !== 201) return;

  const flows = [owner, ...others].map((tenant, n) => traffic(tenant, revoked, n));
  try {
    const mail = join(service.config.dataDir, 'mail');
    const deadline = Date.now() + DISABLE_DEADLINE_MS;
    let status = 'active';
    while ((status !== 'disabled' || noticeCount(mail) === 0) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const read = await client.getWebhook(hook.data.data.id, clientOptions(service.url, owner.key));
      if (read.status === 200) status = read.data.data.status;
    }
    assert.equal(status, 'disabled', `the webhook was not disabled within ${DISABLE_DEADLINE_MS} ms`);
    assert.equal(noticeCount(mail), 1, 'one notice to the owner');
    await new Promise((resolve) => setTimeout(resolve, TRAFFIC_AFTER_NOTICE_MS));
  } finally {
    await Promise.all(flows.map((flow) => flow.stop()));
  }
  for (const [n, flow] of flows.entries()) {
    assert.deepEqual(flow.wrong.slice(0, 5), [], `key ${n} under ${service.runtime}: ${flow.wrong.length} wrong answers`);
    for (const kind of Object.keys(EXPECTED) as Kind[]) assert.ok((flow.counts.get(kind) ?? 0) > 0, `key ${n} sent no "${kind}" request`);
  }
  // And after the traffic: a request of each key still answers.
  for (const tenant of [owner, ...others]) assert.equal((await client.listItems({}, clientOptions(service.url, tenant.key))).status, 200);
});

function noticeCount(folder: string): number {
  try {
    return readdirSync(folder).filter((name) => name.endsWith('.eml')).length;
  } catch {
    return 0;
  }
}
