// The integrator's import journey in the console: a file with bad lines, its results, the failed
// lines downloaded, fixed and imported again.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { expectAccessible, openLink, screenshot, skipBrowser, startConsoleRig } from '../helpers/console.ts';
import type { ConsoleRig } from '../helpers/console.ts';
import { item, jsonl } from '../helpers/imports.ts';
import { startJsonlOrigin } from '../helpers/jsonl-origin.ts';
import type { Page } from 'playwright-core';

const skip = skipBrowser;
let rig: ConsoleRig;

before(async () => { if (!skip) rig = await startConsoleRig(import.meta.filename); });
after(async () => { if (!skip) await rig?.close(); });

test('drops a file with bad lines, reads why they failed, downloads them, fixes them and imports them again', { skip }, async () => {
  const tenant = await rig.svc.newTenant({ name: 'Acme Housewares' });
  const link = await rig.mintLink(tenant.catalogId);
  const { page, requests, violations } = await openLink(rig.browser, link.url);
  await page.getByRole('heading', { name: 'Imports', level: 1 }).waitFor();
  await expectAccessible(page, 'the imports screen');

  const good = [item('NIGHT-1'), item('NIGHT-2'), item('NIGHT-3')];
  const bad = [JSON.stringify(item('NIGHT-4', { price: -5 })), JSON.stringify(item('NIGHT-5', { gtin13: '123' }))];
  await page.getByLabel(/^JSONL file/).setInputFiles({ name: 'nightly.jsonl', mimeType: 'application/x-ndjson', buffer: jsonl([...good, ...bad]) });
  await page.getByRole('button', { name: 'Upload and import' }).click();

  await page.getByText('completed with errors').first().waitFor();
  await page.getByRole('heading', { name: 'Errors by kind' }).waitFor();
  assert.match(await page.getByText(/validation: 2 lines/).innerText(), /validation: 2 lines/);
  await page.getByLabel('Outcome').selectOption('failed');
  await page.getByRole('status').filter({ hasText: '2 lines' }).waitFor();
  const failedRows = page.getByRole('table', { name: 'Line results' }).getByRole('row');
  assert.equal(await failedRows.count(), 3, 'a header and the two failed lines');
  await expectAccessible(page, 'an import job with failed lines');
  await screenshot(page, 'import-results');

  const downloaded = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Download the failed lines' }).click();
  const file = await readFile(await (await downloaded).path());
  assert.deepEqual(file.toString('utf8').trim().split('\n'), bad, 'the failed lines, byte for byte');

  const fixed = file.toString('utf8').trim().split('\n').map((line) => {
    const parsed = JSON.parse(line) as Record<string, unknown>;
    return { ...parsed, price: 5, gtin13: undefined };
  });
  await page.getByRole('link', { name: '← All imports' }).click();
  await dropFile(page, 'fixed.jsonl', jsonl(fixed).toString('utf8'));
  await page.getByText('fixed.jsonl,').waitFor();
  await page.getByRole('button', { name: 'Upload and import' }).click();
  await page.getByRole('heading', { name: /Import .* completed$/ }).waitFor();

  for (const id of ['NIGHT-4', 'NIGHT-5']) {
    const answer = await fetch(`${rig.svc.url}/api/v1/catalog/items/erp/${id}`, { headers: { Authorization: `Bearer ${tenant.key}` } });
    assert.equal(answer.status, 200, `${id} is stored after the fixed import`);
  }
  await page.getByRole('link', { name: '← All imports' }).click();
  await page.getByRole('table', { name: 'Import jobs, newest first' }).waitFor();
  await screenshot(page, 'imports');
  assert.deepEqual(violations, [], 'no Content Security Policy violation');
  assert.ok(requests.every((url) => !url.includes(link.url.split('#link=')[1]!)), 'the link token never leaves the page in a request');
  await page.close();
});

test('imports the nightly feed from its address, and again only when it changed', { skip }, async () => {
  const tenant = await rig.svc.newTenant({ name: 'Acme Feeds' });
  const feed = await startJsonlOrigin();
  try {
    feed.feed = jsonl([item('FEED-1'), item('FEED-2')]);
    const { page } = await openLink(rig.browser, (await rig.mintLink(tenant.catalogId)).url);
    await page.getByLabel('Address of the JSONL file').fill(`${feed.url}/feed.jsonl`);
    await page.getByRole('button', { name: 'Fetch and import' }).click();
    await page.getByRole('heading', { name: /Import .* completed$/ }).waitFor();
    assert.match(await page.getByRole('main').innerText(), /2 created or updated/);

    await page.getByRole('link', { name: '← All imports' }).click();
    await page.getByLabel('Address of the JSONL file').fill(`${feed.url}/feed.jsonl`);
    await page.getByRole('button', { name: 'Fetch and import' }).click();
    await page.getByText('The file had not changed since the last import from this address').waitFor();
    assert.equal(feed.requests.filter((r) => r.method === 'GET' && r.headers['if-none-match'] !== undefined).length, 1, 'the second import asked only whether it changed');
    await page.close();
  } finally {
    await feed.close();
  }
});

/** Drops a file on the drop zone as a person dragging it from their desktop would. */
async function dropFile(page: Page, name: string, text: string): Promise<void> {
  const transfer = await page.evaluateHandle(([fileName, body]) => {
    const data = new DataTransfer();
    data.items.add(new File([body!], fileName!, { type: 'application/x-ndjson' }));
    return data;
  }, [name, text]);
  await page.getByText('or drop the file here').dispatchEvent('drop', { dataTransfer: transfer });
}
