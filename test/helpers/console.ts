// The console in a real browser: a started service, Debian's Chromium, a link minted as a merchant
// platform's backend mints one, axe-core's check of a page and the screenshots docs/console.md shows.
import assert from 'node:assert/strict';
import { readFileSync, renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM_ARGS, chromiumPath } from './chromium.ts';
import { startImportService } from './imports.ts';
import type { Tenant, TestService } from './service.ts';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const SCREENSHOTS = new URL('../../docs/images/', import.meta.url);
export const CATALOG_SCOPES = ['catalog:read', 'catalog:write', 'bulk_import:manage', 'webhooks:manage', 'stock:write', 'keys:manage', 'audit:read'];

/** How long a journey waits for the service to do something in the background (TEST_WAIT_MS). */
export const WAIT_MS = Number(process.env.TEST_WAIT_MS ?? 60_000);

const browserAt = await chromiumPath();
/** Why the browser tests cannot run here, or false. */
export const skipBrowser: string | false = 'unavailable' in browserAt ? browserAt.unavailable : false;

export interface ConsoleRig {
  svc: TestService;
  browser: Browser;
  /** The operator's key, which mints links for any catalog (scope `admin`). */
  admin: Tenant;
  /** A single-use link for a catalog, as the merchant platform's backend gets it. */
  mintLink(catalogId: string, options?: { scopes?: string[]; redeemWithinMinutes?: number }): Promise<{ id: string; url: string }>;
  close(): Promise<void>;
}

export async function startConsoleRig(file: string, overrides: Record<string, string> = {}): Promise<ConsoleRig> {
  const svc = await startImportService(file, { OUTBOUND_ALLOW_PRIVATE: 'true', WEBHOOK_ALLOW_HTTP: 'true', ...overrides });
  const browser = await chromium.launch({ executablePath: (browserAt as { path: string }).path, args: CHROMIUM_ARGS });
  const admin = await svc.newTenant({ scopes: ['admin'] });
  return {
    svc, browser, admin,
    async mintLink(catalogId, options = {}) {
      const answer = await fetch(`${svc.url}/api/v1/catalog/admin/console-links`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${admin.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ catalog: catalogId, scopes: options.scopes ?? CATALOG_SCOPES, redeemWithinMinutes: options.redeemWithinMinutes ?? 15 }),
      });
      const body = await answer.json() as { data: { id: string; url: string } };
      assert.equal(answer.status, 201, JSON.stringify(body));
      return body.data;
    },
    async close() {
      await browser.close();
      await svc.close();
    },
  };
}

export interface OpenedConsole {
  page: Page;
  /** Every address the page requested, and the policy violations it reported. */
  requests: string[];
  violations: string[];
}

/** Opens a link in a new page, as a person clicking it would, and records what the page asks for. */
export async function openLink(browser: Browser, url: string): Promise<OpenedConsole> {
  const page = await browser.newPage();
  const opened: OpenedConsole = { page, requests: [], violations: [] };
  page.on('request', (request) => opened.requests.push(request.url()));
  page.on('console', (message) => { if (/Content Security Policy/i.test(message.text())) opened.violations.push(message.text()); });
  await page.goto(url);
  return opened;
}

/** axe-core's check of the page as it stands: no serious or critical violation. */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  // Evaluated through the DevTools protocol, which the page's script-src does not govern.
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => {
    const run = (globalThis as unknown as { axe: { run(context: Document): Promise<{ violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }> }> } }).axe.run;
    const result = await run(document);
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
  assert.deepEqual(found, [], `axe-core on ${what}`);
}

/** The picture docs/console.md shows, taken as the journey passes the screen (renamed into place whole). */
export async function screenshot(page: Page, name: string): Promise<void> {
  const target = new URL(`console-${name}.png`, SCREENSHOTS);
  const partial = new URL(`.console-${name}-${process.pid}.png`, SCREENSHOTS);
  await page.screenshot({ path: partial.pathname, fullPage: true });
  renameSync(partial, target);
}

/** Checks again, a quarter second apart, until `check` holds or WAIT_MS passed. */
export async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
