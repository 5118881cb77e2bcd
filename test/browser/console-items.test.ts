// "Who set this price, and what was it before?": an item found in the console, its images, its
// history as a timeline of field changes with their sources, a version restored, and its event.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eventually, expectAccessible, openLink, screenshot, skipBrowser, startConsoleRig } from '../helpers/console.ts';
import type { ConsoleRig } from '../helpers/console.ts';
import { makeImage, startImageOrigin } from '../helpers/image-origin.ts';
import type { ImageOrigin } from '../helpers/image-origin.ts';

const skip = skipBrowser;
let rig: ConsoleRig;
let origin: ImageOrigin;

before(async () => {
  if (skip) return;
  origin = await startImageOrigin();
  rig = await startConsoleRig(import.meta.filename);
});
after(async () => {
  if (skip) return;
  await rig?.close();
  await origin?.close();
});

test('finds an item, reads who changed its price, restores the earlier version and sees the new version and event', { skip }, async () => {
  const tenant = await rig.svc.newTenant({ name: 'Acme Housewares' });
  origin.serve('/mug.png', { body: await makeImage('png', 640, 480), contentType: 'image/png' });
  const item = { externalSystem: 'erp', externalId: 'MUG-1', sku: 'MUG-1', name: 'Mug', media: [{ url: origin.at('/mug.png'), role: 'primary' }] };
  const upsert = (price: number, requestId: string) => fetch(`${rig.svc.url}/api/v1/catalog/items/upsert`, {
    method: 'POST', body: JSON.stringify({ ...item, price }),
    headers: { Authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', 'x-request-id': requestId },
  });
  assert.equal((await upsert(10, 'erp-sync-1')).status, 201);
  assert.equal((await upsert(12, 'erp-sync-2')).status, 200);
  const read = async () => (await (await fetch(`${rig.svc.url}/api/v1/catalog/items/erp/MUG-1`, { headers: { Authorization: `Bearer ${tenant.key}` } })).json()) as { data: { price: number; media: Array<{ status: string }> } };
  await eventually(async () => (await read()).data.media[0]?.status === 'ingested', 'the mug\'s image is ingested');

  const { page, violations } = await openLink(rig.browser, (await rig.mintLink(tenant.catalogId)).url);
  await page.getByRole('link', { name: 'Items', exact: true }).click();
  await page.getByLabel('External system').fill('erp');
  await page.getByLabel('External id').fill('MUG-1');
  await page.getByRole('button', { name: 'Open the item' }).click();
  await page.getByRole('heading', { name: /^Mug/, level: 1 }).waitFor();
  await page.getByRole('img', { name: 'Mug, primary image 1' }).waitFor();
  assert.ok(await page.getByRole('img', { name: 'Mug, primary image 1' }).evaluate((img) => (img as HTMLImageElement).naturalWidth > 0), 'the thumbnail loads from the service');

  const change = page.getByRole('table', { name: 'What version 2 changed' });
  assert.match(await change.innerText(), /price\s+10\s+12/);
  assert.match(await page.getByRole('listitem').filter({ has: change }).innerText(), new RegExp(`by key ${tenant.key.slice(0, 13)}…, request erp-sync-2`));
  await expectAccessible(page, 'an item and its history');
  await screenshot(page, 'item-history');

  await page.getByRole('button', { name: 'Restore version 1' }).click();
  await page.getByText('Version 1 was restored as a new version.').waitFor();
  const restored = page.getByRole('table', { name: 'What version 3 changed' });
  await restored.waitFor();
  assert.match(await restored.innerText(), /price\s+12\s+10/);
  assert.match(await page.getByRole('listitem').filter({ has: restored }).innerText(), /restore of version 1 by this console session/);
  assert.equal((await read()).data.price, 10, 'the API answers the restored price');

  await page.getByRole('link', { name: "This item's events" }).click();
  const newest = page.getByRole('list', { name: 'Events, newest first' }).getByRole('listitem').first();
  await newest.getByText('item.updated', { exact: true }).click();
  const event = JSON.parse(await newest.getByRole('region').innerText()) as { data: { changedFields: string[]; price: number } };
  assert.deepEqual([event.data.changedFields, event.data.price], [['price'], 10], 'the restore\'s event is the newest, with the price back');
  await expectAccessible(page, 'the events of an item');
  await screenshot(page, 'events');
  assert.deepEqual(violations, []);
  await page.close();
});
