// /docs and CORS in a real browser (Debian's Chromium, driven by playwright-core): "Try it out" on an upsert answers 201 on whatever port the service runs at.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { CHROMIUM_ARGS, chromiumPath } from '../helpers/chromium.ts';
import { startTestService } from '../helpers/service.ts';
import type { TestService } from '../helpers/service.ts';

// A page in another origin that calls the service with a key: the browser sends a preflight first.
const CALLER_PAGE = `<!doctype html><title>caller</title><script>
window.call = async (api, key) => {
  try {
    const answer = await fetch(api + '/items/upsert', {
      method: 'POST', headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ externalSystem: 'web', externalId: 'CORS-' + Date.now(), name: 'From a page' }),
    });
    return { status: answer.status, requestId: answer.headers.get('X-Request-Id') };
  } catch (error) { return { failed: String(error) }; }
};
</script>`;

const browserAt = await chromiumPath();
const skip = 'unavailable' in browserAt ? browserAt.unavailable : false;
let browser: Browser;
let svc: TestService;
let callerOrigin: string;
const caller = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(CALLER_PAGE));

before(async () => {
  if (skip) return;
  caller.listen(0, '127.0.0.1');
  await new Promise((resolve) => caller.once('listening', resolve));
  callerOrigin = `http://127.0.0.1:${(caller.address() as AddressInfo).port}`;
  svc = await startTestService(import.meta.filename, { CORS_ALLOWED_ORIGINS: callerOrigin });
  browser = await chromium.launch({ executablePath: (browserAt as { path: string }).path, args: CHROMIUM_ARGS });
});

after(async () => {
  if (skip) return;
  await browser?.close();
  await svc?.close();
  caller.close();
});

test('/docs: "Try it out" upserts an item with a key, with every asset from the service', { skip }, async () => {
  const { key } = await svc.newTenant({ scopes: ['catalog:write', 'catalog:read'] });
  const page = await browser.newPage();
  const origins = new Set<string>();
  page.on('request', (request) => origins.add(new URL(request.url()).origin));

  await page.goto(`${svc.url}/docs`);
  await page.locator('#operations-items-upsertItem').waitFor();

  await page.locator('button.authorize').first().click();
  const dialog = page.locator('.modal-ux');
  await dialog.locator('input').first().fill(key);
  await dialog.locator('button.authorize').click();
  await dialog.locator('button.close-modal').click();

  const operation = page.locator('#operations-items-upsertItem');
  await operation.locator('.opblock-summary').click();
  await operation.locator('button.try-out__btn').click();
  const externalId = `DOCS-${Date.now()}`;
  await operation.locator('textarea.body-param__text').fill(JSON.stringify({ externalSystem: 'web', externalId, name: 'Tried in /docs' }));
  await operation.locator('button.execute').click();

  const status = operation.locator('.live-responses-table tr.response .response-col_status').first();
  await status.waitFor();
  assert.equal((await status.textContent())?.trim(), '201');
  const read = await fetch(`${svc.url}/api/v1/catalog/items/web/${externalId}`, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(read.status, 200, 'the item tried in /docs was stored');
  assert.deepEqual([...origins], [svc.url], 'the page and everything it loads and calls come from the service');
  await page.close();
});

test('CORS: a page of an allowed origin calls the API after the preflight; another origin is refused', { skip }, async () => {
  const { key } = await svc.newTenant({ scopes: ['catalog:write'] });
  const api = `${svc.url}/api/v1/catalog`;
  const page = await browser.newPage();
  await page.goto(`${callerOrigin}/`);
  const allowed = await page.evaluate(([a, k]) => (window as unknown as { call: (api: string, key: string) => Promise<unknown> }).call(a!, k!), [api, key]);
  assert.deepEqual(Object.keys(allowed as object).sort(), ['requestId', 'status']);
  assert.equal((allowed as { status: number }).status, 201, JSON.stringify(allowed));
  assert.ok((allowed as { requestId: string | null }).requestId, 'X-Request-Id is exposed to the page');

  // localhost is another origin than 127.0.0.1 for the browser, and it is not in the list.
  await page.goto(`${callerOrigin.replace('127.0.0.1', 'localhost')}/`);
  const refused = await page.evaluate(([a, k]) => (window as unknown as { call: (api: string, key: string) => Promise<unknown> }).call(a!, k!), [api, key]);
  assert.match((refused as { failed?: string }).failed ?? '', /Failed to fetch/, JSON.stringify(refused));
  await page.close();
});
