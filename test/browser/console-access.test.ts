// Who gets in and what they can do: a read-only link, an expired one, a used one, one catalog's
// session asking for another's ids, a framing page, and sign-out.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { expectAccessible, openLink, screenshot, skipBrowser, startConsoleRig } from '../helpers/console.ts';
import type { ConsoleRig } from '../helpers/console.ts';
import { query } from '../../platform/db/sql.ts';

const skip = skipBrowser;
let rig: ConsoleRig;
let dashboard: ReturnType<typeof createServer>;
let dashboardOrigin: string;
let consoleUrl = '';

before(async () => {
  if (skip) return;
  // The merchant platform's own dashboard, which embeds the console for its user.
  dashboard = createServer((req, res) => res.writeHead(200, { 'content-type': 'text/html' })
    .end(`<!doctype html><title>Platform dashboard</title><h1>Platform</h1><iframe title="Catalog console" width="1000" height="700" src="${consoleUrl}"></iframe>`));
  dashboard.listen(0, '127.0.0.1');
  await new Promise((resolve) => dashboard.once('listening', resolve));
  dashboardOrigin = `http://127.0.0.1:${(dashboard.address() as AddressInfo).port}`;
  rig = await startConsoleRig(import.meta.filename, { CONSOLE_FRAME_ANCESTORS: dashboardOrigin });
});
after(async () => {
  if (skip) return;
  await rig?.close();
  dashboard?.close();
});

const api = (path: string, token: string, init: RequestInit = {}) => fetch(`${rig.svc.url}/api/v1/catalog${path}`, {
  ...init, headers: { Authorization: `Bearer ${token}`, 'content-type': 'application/json' },
});

test('a read-only link shows no write action, and the API refuses its session a write anyway', { skip }, async () => {
  const tenant = await rig.svc.newTenant();
  await api('/items/upsert', tenant.key, { method: 'POST', body: JSON.stringify({ externalSystem: 'erp', externalId: 'CUP-1', name: 'Cup', price: 3 }) });
  await api('/items/upsert', tenant.key, { method: 'POST', body: JSON.stringify({ externalSystem: 'erp', externalId: 'CUP-1', name: 'Cup', price: 4 }) });
  const { page } = await openLink(rig.browser, (await rig.mintLink(tenant.catalogId, { scopes: ['catalog:read'] })).url);
  await page.getByText('read-only').waitFor();
  const sections = await page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allInnerTexts();
  assert.deepEqual(sections, ['Items', 'Events'], 'only the sections a reader may see');
  await page.goto(`${rig.svc.url}/console/#/items/erp/CUP-1`);
  await page.getByRole('heading', { name: 'History' }).waitFor();
  await page.getByRole('table', { name: 'What version 2 changed' }).waitFor();
  assert.equal(await page.getByRole('button', { name: /Restore/ }).count(), 0, 'no restore for a reader');
  await expectAccessible(page, 'a read-only item page');

  const token = await page.evaluate(() => (JSON.parse(sessionStorage.getItem('catalog-console-session')!) as { token: string }).token);
  const refused = await api('/items/erp/CUP-1/versions/1/restore', token, { method: 'POST' });
  assert.equal(refused.status, 403, 'the session cannot write whatever a page sends');
  await page.close();
});

test('an expired link, a used link and a made-up one each get a page that says so', { skip }, async () => {
  const tenant = await rig.svc.newTenant();
  const expired = await rig.mintLink(tenant.catalogId, { redeemWithinMinutes: 1 });
  await query(rig.svc.orm.em, 'test.expire_link', `UPDATE console_links SET redeem_by = now() - interval '1 second' WHERE id = $1`, [expired.id]);
  const late = await openLink(rig.browser, expired.url);
  await late.page.getByRole('heading', { name: 'This link has expired' }).waitFor();
  await expectAccessible(late.page, 'the expired-link page');
  await screenshot(late.page, 'expired-link');

  const used = await rig.mintLink(tenant.catalogId);
  const first = await openLink(rig.browser, used.url);
  await first.page.getByRole('heading', { name: 'Imports', level: 1 }).waitFor();
  const second = await openLink(rig.browser, used.url);
  await second.page.getByRole('heading', { name: 'This link was already used' }).waitFor();

  const madeUp = await openLink(rig.browser, `${rig.svc.url}/console/#link=cl_${'x'.repeat(32)}`);
  await madeUp.page.getByRole('heading', { name: 'This link is not valid' }).waitFor();
  for (const opened of [late, first, second, madeUp]) await opened.page.close();
});

test("one catalog's session finds nothing of another's, by any id", { skip }, async () => {
  const mine = await rig.svc.newTenant();
  const theirs = await rig.svc.newTenant();
  await api('/items/upsert', theirs.key, { method: 'POST', body: JSON.stringify({ externalSystem: 'erp', externalId: 'SECRET-1', name: 'Theirs' }) });
  const job = await (await api('/imports', theirs.key, { method: 'POST', body: JSON.stringify({ fileSizeBytes: 10 }) })).json() as { data: { jobId: string } };
  const hook = await (await api('/webhooks', theirs.key, { method: 'POST', body: JSON.stringify({ url: 'https://shop.example/hook', events: ['*'] }) })).json() as { data: { id: string } };
  const { page } = await openLink(rig.browser, (await rig.mintLink(mine.catalogId)).url);
  await page.getByRole('heading', { name: 'Imports', level: 1 }).waitFor();
  const screens: Array<[string, RegExp]> = [
    ['items/erp/SECRET-1', /Item erp\/SECRET-1 .*not found/i], [`imports/${job.data.jobId}`, /Import job .*not found/i], [`webhooks/${hook.data.id}`, /Webhook .*not found/i],
  ];
  for (const [path, refusal] of screens) {
    await page.goto(`${rig.svc.url}/console/#/${path}`);
    await page.getByRole('alert').filter({ hasText: refusal }).first().waitFor();
  }
  assert.equal(await page.getByText('Theirs').count(), 0, 'nothing of the other catalog is shown');
  await page.close();
});

test('the console works inside the merchant platform dashboard it may be framed by, and leaves when signed out', { skip }, async () => {
  const tenant = await rig.svc.newTenant();
  consoleUrl = (await rig.mintLink(tenant.catalogId)).url;
  const page = await rig.browser.newPage();
  await page.goto(dashboardOrigin);
  const framed = page.frameLocator('iframe[title="Catalog console"]');
  await framed.getByRole('heading', { name: 'Imports', level: 1 }).waitFor();
  await framed.getByRole('button', { name: 'Sign out' }).click();
  await framed.getByRole('heading', { name: 'The console session has ended' }).waitFor();

  const answer = await fetch(`${rig.svc.url}/console/`);
  const policy = answer.headers.get('content-security-policy') ?? '';
  assert.match(policy, new RegExp(`frame-ancestors ${dashboardOrigin}(;|$)`));
  assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval/);
  assert.match(policy, /default-src 'none'/);
  await page.close();
});

test('makes a key within the session\'s own scopes, sees it once, and revokes it', { skip }, async () => {
  const tenant = await rig.svc.newTenant({ name: 'Acme Housewares' });
  const { page } = await openLink(rig.browser, (await rig.mintLink(tenant.catalogId, { scopes: ['catalog:read', 'catalog:write', 'keys:manage'] })).url);
  await page.getByRole('link', { name: 'Keys' }).click();
  const offered = await page.getByRole('group', { name: /Scopes/ }).getByRole('checkbox').evaluateAll((boxes) => boxes.map((box) => box.parentElement!.textContent!.trim()));
  assert.deepEqual(offered, ['catalog:read', 'catalog:write'], 'only scopes the session has');
  await page.getByLabel('What it is for').fill('ERP nightly feed');
  await page.getByRole('checkbox', { name: 'catalog:write' }).check();
  await page.getByRole('button', { name: 'Create the key' }).click();
  const key = (await page.getByLabel('The new API key').innerText()).trim();
  assert.equal((await api('/items?limit=1', key)).status, 200, 'the new key works');
  const row = page.getByRole('row').filter({ hasText: 'ERP nightly feed' });
  assert.doesNotMatch(await page.getByRole('table', { name: 'API keys' }).innerText(), new RegExp(key.slice(12)), 'the list never shows a secret');
  await expectAccessible(page, 'the keys screen');
  await screenshot(page, 'keys');
  await row.getByRole('button', { name: /Revoke/ }).click();
  await row.getByRole('button', { name: /^Yes, revoke key/ }).click();
  await row.getByText('revoked').waitFor();
  assert.equal((await api('/items?limit=1', key)).status, 401, 'the revoked key is refused');
  await page.close();
});

test('a person on the keyboard alone skips to the content, moves between sections and opens an item', { skip }, async () => {
  const tenant = await rig.svc.newTenant();
  await api('/items/upsert', tenant.key, { method: 'POST', body: JSON.stringify({ externalSystem: 'erp', externalId: 'KEY-1', name: 'Kettle' }) });
  const { page } = await openLink(rig.browser, (await rig.mintLink(tenant.catalogId)).url);
  await page.getByRole('heading', { name: 'Imports', level: 1 }).waitFor();
  await page.keyboard.press('Tab');
  const skip = page.getByRole('link', { name: 'Skip to content' });
  assert.ok(await skip.evaluate((link) => link === document.activeElement), 'the first stop is the skip link');
  assert.notEqual(await skip.evaluate((link) => getComputedStyle(link).outlineStyle), 'none', 'focus is visible');
  for (let stop = 0; stop < 10 && !(await page.getByRole('link', { name: 'Items', exact: true }).evaluate((link) => link === document.activeElement)); stop += 1) {
    await page.keyboard.press('Tab');
  }
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Items', level: 1 }).waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'content', 'the new screen has the focus');
  for (let stop = 0; stop < 10 && !(await page.getByLabel('External system').evaluate((field) => field === document.activeElement)); stop += 1) {
    await page.keyboard.press('Tab');
  }
  await page.keyboard.type('erp');
  await page.keyboard.press('Tab');
  await page.keyboard.type('KEY-1');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: /^Kettle/, level: 1 }).waitFor();
  await page.close();
});
