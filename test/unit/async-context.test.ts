// Work started inside one request's or transaction's async context never runs in it: group-commit drains and lazy loads start in the root context, on Node and on Deno.
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import { detached } from '../../platform/async-context.ts';
import { groupCommit } from '../../platform/group-commit.ts';

// Stands for MikroORM's transaction context, or any request-scoped store.
const store = new AsyncLocalStorage<string>();

test('a group commit writes every group in the root context, never in the context of the caller that started its drain', async () => {
  const seen: Array<string | undefined> = [];
  let release = () => undefined as void;
  const held = new Promise<void>((resolve) => { release = resolve; });
  const submit = groupCommit<string, string>(async (_key, items) => {
    seen.push(store.getStore());
    if (items.includes('first')) await held;
    return items;
  });
  const first = store.run('transaction of request 1', () => submit('k', 'first'));
  // Arrive while the first write is in flight: the first caller's drain writes them.
  const second = store.run('request 2', () => submit('k', 'second'));
  const third = store.run('request 3', () => submit('k', 'third'));
  release();
  assert.deepEqual(await Promise.all([first, second, third]), ['first', 'second', 'third']);
  assert.deepEqual(seen, [undefined, undefined]);
});

test('detached work sees none of its caller\'s context, and the caller keeps its own', async () => {
  await store.run('transaction', async () => {
    assert.equal(await detached(async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return store.getStore();
    }), undefined);
    assert.equal(store.getStore(), 'transaction');
  });
});

test('a module loaded on first use inside a transaction leaves later incoming requests outside it', async (t) => {
  // A module this process has not loaded yet: only a first load goes through the runtime's module loader.
  const dir = mkdtempSync(join(tmpdir(), 'catalog-async-context-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const module = join(dir, 'lazy.mjs');
  writeFileSync(module, 'export const loaded = true;\n');

  const contexts: Array<string | undefined> = [];
  const server = createServer((_req, res) => {
    contexts.push(store.getStore());
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

  await store.run('transaction', async () => {
    const { loaded } = await detached(() => import(pathToFileURL(module).href) as Promise<{ loaded: boolean }>);
    assert.equal(loaded, true);
  });
  for (let i = 0; i < 3; i++) await (await fetch(url)).text();
  assert.deepEqual(contexts, [undefined, undefined, undefined]);
});
