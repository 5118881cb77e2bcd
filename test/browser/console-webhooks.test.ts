// The support colleague's delivery journey: a filtered, ordered webhook made in the console against
// a shop endpoint that fails until the webhook is disabled, the failure read in the delivery log,
// the webhook resumed and the delivery retried once the shop is back; then "who removed our
// filter?" answered from the webhook's audit log.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eventually, expectAccessible, openLink, screenshot, skipBrowser, startConsoleRig, WAIT_MS } from '../helpers/console.ts';
import type { ConsoleRig } from '../helpers/console.ts';
import { startReceiver } from '../helpers/webhook-receiver.ts';
import type { Receiver } from '../helpers/webhook-receiver.ts';

const skip = skipBrowser;
let rig: ConsoleRig;
let shop: Receiver;

before(async () => {
  if (skip) return;
  shop = await startReceiver();
  // Eight quick attempts, so a delivery to an endpoint that is down is exhausted while the test watches.
  // One exhausted delivery disables a webhook here (20 by default), so the journey meets a disabled one.
  rig = await startConsoleRig(import.meta.filename, { WEBHOOK_RETRY_DELAYS_MS: '0,50,50,50,50,50,50,50', WEBHOOK_DISABLE_AFTER: '1' });
});
after(async () => {
  if (skip) return;
  await rig?.close();
  await shop?.close();
});

test('creates a filtered, ordered webhook, sees a price change fail at the shop until it is disabled, resumes it and retries once the shop is back', { skip }, async () => {
  const tenant = await rig.svc.newTenant({ name: 'Acme Housewares' });
  const upsert = (body: object) => fetch(`${rig.svc.url}/api/v1/catalog/items/upsert`, {
    method: 'POST', headers: { Authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ externalSystem: 'erp', externalId: 'MUG-1', name: 'Mug', price: 10, ...body }),
  });
  assert.equal((await upsert({})).status, 201);
  let shopIsDown = true;
  shop.script('/shop', () => (shopIsDown ? { status: 503, body: 'down for maintenance' } : { status: 204 }));

  const { page, violations } = await openLink(rig.browser, (await rig.mintLink(tenant.catalogId)).url);
  await page.getByRole('link', { name: 'Webhooks' }).click();
  await page.getByRole('button', { name: 'New webhook' }).click();
  await page.getByLabel('Endpoint address').fill(shop.url('/shop'));
  await page.getByLabel('Description').fill('Shop price sync');
  await page.getByRole('checkbox', { name: 'item.created' }).uncheck();
  await page.getByRole('checkbox', { name: 'item.deleted' }).uncheck();
  await page.getByRole('checkbox', { name: /in order/ }).check();
  await page.getByRole('button', { name: 'Add a condition' }).click();
  await page.getByLabel('Field').fill('changedFields');
  await page.getByLabel('Value').fill('price');
  const filter = page.getByRole('region', { name: 'The filter in the filter language' });
  assert.deepEqual(JSON.parse(await filter.innerText()), { field: 'changedFields', equals: 'price' });
  await expectAccessible(page, 'the new webhook form');
  await screenshot(page, 'webhook-form');
  await page.getByRole('button', { name: 'Create the webhook' }).click();
  const secret = (await page.getByLabel('Signing secret').innerText()).trim();
  shop.secrets('/shop', [secret]);

  assert.equal((await upsert({ name: 'Mug, blue' })).status, 200, 'a change of name only: the filter leaves it out');
  assert.equal((await upsert({ name: 'Mug, blue', price: 12 })).status, 200, 'the price change the shop must get');
  await page.getByRole('link', { name: shop.url('/shop') }).click();
  const log = page.getByRole('table', { name: 'Deliveries, newest first' });
  await eventually(async () => {
    await page.getByRole('button', { name: 'Refresh the log' }).click();
    return (await log.getByText('exhausted').count()) === 1;
  }, 'the delivery to the shop that is down is exhausted');
  assert.equal(await log.getByRole('row').count(), 2, 'one delivery: the name-only change was filtered out');

  await log.getByRole('link', { name: 'item.updated' }).click();
  await page.getByRole('heading', { name: /Delivery of item.updated/ }).waitFor();
  assert.match(await page.getByRole('table', { name: 'Attempts' }).innerText(), /503[\s\S]*down for maintenance/);
  await expectAccessible(page, 'a failed delivery');
  await screenshot(page, 'delivery');

  await page.getByRole('link', { name: '← The webhook and its log' }).click();
  await page.getByRole('heading', { name: 'Webhook disabled' }).waitFor();
  await page.getByRole('button', { name: 'Retry', exact: false }).first().click();
  await page.getByRole('alert').filter({ hasText: /disabled/ }).waitFor();

  shopIsDown = false;
  await page.getByRole('button', { name: 'Resume the webhook' }).click();
  await page.getByRole('heading', { name: 'Webhook active' }).waitFor();
  await log.getByRole('link', { name: 'item.updated' }).click();
  await page.getByRole('button', { name: 'Retry the delivery' }).click();
  await page.getByRole('heading', { name: /Delivery of item.updated succeeded/ }).waitFor({ timeout: WAIT_MS });
  const received = shop.receipts('/shop').filter((receipt) => receipt.headers['webhook-id'] !== undefined && receipt.event.type === 'item.updated');
  const delivered = received.at(-1)!;
  assert.deepEqual(delivered.event.data.changedFields, ['price']);
  assert.ok(delivered.standardValid, 'the signature verifies with the secret the console showed once');
  await page.getByRole('link', { name: '← The webhook and its log' }).click();
  await eventually(async () => {
    await page.reload();
    return /Last success\s+\d/.test(await page.getByRole('main').innerText());
  }, 'the webhook shows its last success');
  await expectAccessible(page, 'a webhook with its delivery log');
  await screenshot(page, 'webhook');

  // The ERP's key removes the filter; the webhook's audit log says who, from where, in which request.
  const hookId = decodeURIComponent(new URL(page.url()).hash).split('/')[2]!;
  const patched = await fetch(`${rig.svc.url}/api/v1/catalog/webhooks/${hookId}`, {
    method: 'PATCH', body: JSON.stringify({ filter: null }),
    headers: { Authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', 'x-request-id': 'erp-change-7' },
  });
  assert.equal(patched.status, 200);
  await page.getByRole('link', { name: 'Who changed this webhook' }).click();
  const entries = page.getByRole('list', { name: 'Changes, newest first' }).getByRole('listitem');
  await entries.first().getByText('webhook.updated', { exact: true }).waitFor();
  const newest = await entries.first().innerText();
  assert.match(newest, new RegExp(`by key ${tenant.key.slice(0, 13)}… from 127\\.0\\.0\\.1, request erp-change-7`));
  assert.match(await page.getByRole('table', { name: 'What webhook.updated changed' }).innerText(), /filter\s+\{[\s\S]*changedFields[\s\S]*\}\s+null/);
  const actions = await Promise.all((await entries.getByRole('heading').all()).map((heading) => heading.innerText()));
  assert.deepEqual(actions.map((text) => text.split(/\s/)[0]), ['webhook.updated', 'webhook.resumed', 'webhook.disabled', 'webhook.created'], 'newest first');
  assert.match(await entries.nth(2).innerText(), /by the service/);
  assert.match(await entries.nth(1).innerText(), /by this console session/);
  await expectAccessible(page, 'a webhook\'s audit log');
  await screenshot(page, 'audit-log');
  assert.deepEqual(violations, []);
  await page.close();
});
