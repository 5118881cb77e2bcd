// `npm run bench:console`: each console screen's first load in a fresh browser (the bytes it
// transfers, compressed, and the time until the screen shows its data), beside /docs in the same
// run and the 150 KB budget.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { createApiKey } from '../domain/access/key-store.ts';
import { createCatalog } from '../domain/access/catalogs.ts';
import { openDatabase } from '../platform/db/orm.ts';
import { createLogger } from '../platform/log/logger.ts';
import { ensureKafka } from '../scripts/kafka.ts';
import { freePort } from '../scripts/free-port.ts';
import { CHROMIUM_ARGS, chromiumPath } from '../test/helpers/chromium.ts';
import { dropBenchDatabase, freshBenchDatabase } from './database.ts';
import { SERVICE_PROCESS_ENV } from './service-env.ts';
import { cliActor } from '../platform/actor.ts';
import { track } from './children.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DB_NAME = 'catalog_bench_console';
const BUDGET_KB = 150;

interface Load { assetsKb: number; apiKb: number; ms: number }

/** One cold load: a new browser context (no cache), the session put where the console keeps it. */
async function load(browser: Browser, url: string, ready: string, session: object | undefined): Promise<Load> {
  const context = await browser.newContext();
  if (session) await context.addInitScript((value) => sessionStorage.setItem('catalog-console-session', value), JSON.stringify(session));
  const page = await context.newPage();
  const sizes: Array<Promise<{ api: boolean; bytes: number }>> = [];
  page.on('requestfinished', (request) => sizes.push(request.sizes().then((s) => ({ api: request.url().includes('/api/v1/'), bytes: s.responseBodySize + s.responseHeadersSize }))));
  const began = performance.now();
  await page.goto(url);
  await page.locator(ready).first().waitFor();
  const ms = performance.now() - began;
  await page.waitForLoadState('networkidle');
  const all = await Promise.all(sizes);
  await context.close();
  const kb = (api: boolean) => all.filter((s) => s.api === api).reduce((sum, s) => sum + s.bytes, 0) / 1024;
  return { assetsKb: kb(false), apiKb: kb(true), ms };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main() {
  const at = await chromiumPath();
  if ('unavailable' in at) throw new Error(at.unavailable);
  const { brokers } = await ensureKafka({ dataDir: resolve('.data') });
  const databaseUrl = await freshBenchDatabase(ADMIN_URL, DB_NAME);
  const orm = await openDatabase({ databaseUrl, logger: createLogger('warn', 2), poolSize: 2 });
  const catalog = await createCatalog(orm.em.fork(), { name: 'bench-console', ownerEmail: 'bench@example.com' }, cliActor());
  const { key } = await createApiKey(orm.em.fork(), { catalogId: catalog.id, scopes: ['catalog:read', 'catalog:write', 'admin'], tier: 'enterprise' }, cliActor());
  await orm.close();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const service = track(spawn(process.execPath, ['cli/main.ts', 'serve'], {
    env: { ...process.env, ...SERVICE_PROCESS_ENV, DATABASE_URL: databaseUrl, KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: 'bench-console.', LOG_LEVEL: 'warn', PORT: String(port), OPS_PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  }));
  const browser = await chromium.launch({ executablePath: at.path, args: CHROMIUM_ARGS });
  try {
    while (!(await fetch(`${url}/healthz`).then((r) => r.ok, () => false))) await new Promise((done) => setTimeout(done, 200));
    const call = async (path: string, body: object, token = key) => {
      const headers = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
      const answer = await fetch(`${url}/api/v1/catalog${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (!answer.ok) throw new Error(`${path} answered ${answer.status}: ${await answer.text()}`);
      return ((await answer.json()) as { data: Record<string, unknown> }).data;
    };
    for (const price of [10, 11, 12]) await call('/items/upsert', { externalSystem: 'erp', externalId: 'MUG-1', name: 'Mug', price });
    const link = await call('/admin/console-links', { catalog: catalog.id, scopes: ['catalog:read', 'catalog:write', 'bulk_import:manage', 'webhooks:manage', 'keys:manage'] });
    const opened = await call('/console-sessions', { link: String(link.url).split('#link=')[1] }, '');
    const session = { token: opened.token, catalogId: catalog.id, catalogName: 'bench-console', scopes: opened.scopes, expiresAt: opened.expiresAt };
    const pages: Array<[string, string, string, object | undefined]> = [
      ['/docs (Swagger UI, baseline)', `${url}/docs`, '.opblock', undefined],
      ['console: imports', `${url}/console/#/imports`, 'h1:has-text("Imports")', session],
      ['console: webhooks', `${url}/console/#/webhooks`, 'h1:has-text("Webhooks")', session],
      ['console: an item and its history', `${url}/console/#/items/erp/MUG-1`, '.timeline li', session],
      ['console: events', `${url}/console/#/events`, '.events li', session],
      ['console: keys', `${url}/console/#/keys`, 'h1:has-text("API keys")', session],
    ];
    console.log(`First load in a fresh browser context, median of ${ROUNDS}; budget ${BUDGET_KB} KB compressed:`);
    console.log('page                                  files KB   API KB   shown ms');
    for (const [name, address, ready, state] of pages) {
      const loads: Load[] = [];
      for (let round = 0; round < ROUNDS; round += 1) loads.push(await load(browser, address, ready, state));
      const files = median(loads.map((l) => l.assetsKb));
      console.log(`${name.padEnd(36)} ${files.toFixed(1).padStart(9)} ${median(loads.map((l) => l.apiKb)).toFixed(1).padStart(8)} ${median(loads.map((l) => l.ms)).toFixed(0).padStart(10)}${files > BUDGET_KB ? '   over budget' : ''}`);
    }
  } finally {
    await browser.close();
    await new Promise<void>((done) => { service.once('exit', () => done()); service.kill('SIGTERM'); });
    await dropBenchDatabase(ADMIN_URL, DB_NAME);
  }
}

await main();
