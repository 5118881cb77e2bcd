// The code blocks the docs mark `<!-- runnable: NAME -->` (the Kafka reader, the webhook receivers), run as written against a started service.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { freePort } from '../../scripts/free-port.ts';
import { startTestService } from '../helpers/service.ts';
import type { Tenant, TestService } from '../helpers/service.ts';
import { runId } from '../helpers/test-run.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const DENO = join(ROOT, 'node_modules/.bin/deno');
// A receiver's first delivery may come only with the retry 5 s after a miss; a busy machine adds more.
const OUTPUT_TIMEOUT_MS = 90_000;

interface Snippet { name: string; language: string; code: string; page: string }

/** Every block after a `<!-- runnable: NAME -->` marker in README.md and docs/. */
async function snippets(): Promise<Map<string, Snippet>> {
  const pages = ['README.md', ...(await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const found = new Map<string, Snippet>();
  for (const page of pages) {
    const text = await readFile(join(ROOT, page), 'utf8');
    for (const [, name, language, code] of text.matchAll(/<!-- runnable: ([\w-]+) -->\n```(\w+)\n([\s\S]*?)```/g)) {
      assert.ok(!found.has(name!), `${page}: a second block named ${name}`);
      found.set(name!, { name: name!, language: language!, code: code!, page });
    }
  }
  return found;
}

/** A started snippet: its output so far, and a wait for a line in it. */
class Running {
  output = '';
  readonly name: string;
  readonly child: ChildProcess;

  constructor(name: string, child: ChildProcess) {
    this.name = name;
    this.child = child;
    child.stdout!.on('data', (chunk: Buffer) => { this.output += chunk; });
    child.stderr!.on('data', (chunk: Buffer) => { this.output += chunk; });
  }

  async waitFor(pattern: RegExp): Promise<void> {
    const deadline = Date.now() + OUTPUT_TIMEOUT_MS;
    while (!pattern.test(this.output)) {
      assert.ok(this.child.exitCode === null, `${this.name} exited with ${this.child.exitCode}:\n${this.output}`);
      assert.ok(Date.now() < deadline, `${this.name} printed no ${pattern} within ${OUTPUT_TIMEOUT_MS / 1000} s:\n${this.output}`);
      await new Promise((done) => setTimeout(done, 200));
    }
  }

  stop(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

const listening = (port: number) => new Promise<boolean>((done) => {
  const socket = connect(port, '127.0.0.1', () => { socket.destroy(); done(true); });
  socket.on('error', () => done(false));
});

let service: TestService;
let tenant: Tenant;
let found: Map<string, Snippet>;
let dir: string;
const running: Running[] = [];

before(async () => {
  found = await snippets();
  // Development settings, as the docs say: a receiver on this machine, over http.
  service = await startTestService(import.meta.filename, { WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOW_PRIVATE: 'true' });
  tenant = await service.newTenant();
  // Inside the checkout, so that `import 'kafkajs'` finds the project's packages, as in a project of yours.
  dir = join(ROOT, '.cache', `snippets-${runId()}-${process.pid}`);
  await mkdir(dir, { recursive: true });
  await copyFile(join(ROOT, 'domain/webhooks/verify-signature.ts'), join(dir, 'verify-signature.ts'));
});

after(async () => {
  for (const snippet of running) snippet.stop();
  await service?.close();
  await rm(dir, { recursive: true, force: true });
});

async function call(method: string, path: string, body?: unknown): Promise<{ data: Record<string, unknown> }> {
  const response = await fetch(`${service.url}/api/v1/catalog${path}`, {
    method, headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${await response.clone().text()}`);
  return await response.json() as { data: Record<string, unknown> };
}

async function upsert(externalId: string, name: string): Promise<void> {
  await call('POST', '/items/upsert', { externalSystem: 'erp', externalId, name, price: 9.5 });
}

function start(name: string, command: string, args: string[], env: Record<string, string>): Running {
  const child = spawn(command, args, { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const started = new Running(name, child);
  running.push(started);
  return started;
}

// How each marked block is run: a new marked block fails the test until it has its runner here.
const RECEIVERS: Record<string, { file: string; command: () => [string, string[]] | undefined }> = {
  'webhook-receiver-node': { file: 'receiver.ts', command: () => [process.execPath, ['receiver.ts']] },
  'webhook-receiver-deno': { file: 'receiver.deno.ts', command: () => [DENO, ['run', '--allow-net', '--allow-env', 'receiver.deno.ts']] },
  'webhook-receiver-python': {
    file: 'receiver.py',
    command: () => (spawnSync('python3', ['--version']).status === 0 ? ['python3', ['receiver.py']] : undefined),
  },
};

test('every runnable block has a runner, and every runner its block', () => {
  assert.deepEqual([...found.keys()].sort(), [...Object.keys(RECEIVERS), 'kafka-reader'].sort());
});

test('the webhook receivers verify and print the deliveries of a real webhook', async (t) => {
  const receivers: Array<{ name: string; port: number; receiver: Running }> = [];
  for (const [name, how] of Object.entries(RECEIVERS)) {
    const snippet = found.get(name);
    assert.ok(snippet, `a block marked ${name}`);
    const command = how.command();
    if (!command) {
      t.diagnostic(`${name}: skipped, its interpreter is missing`);
      continue;
    }
    const port = await freePort();
    const created = await call('POST', '/webhooks', { url: `http://127.0.0.1:${port}/hook`, events: ['item.created'] });
    await writeFile(join(dir, how.file), snippet.code);
    const receiver = start(name, command[0], command[1], { CATALOG_WEBHOOK_SECRET: String(created.data.secret), PORT: String(port) });
    const deadline = Date.now() + OUTPUT_TIMEOUT_MS;
    while (!(await listening(port))) {
      assert.ok(receiver.child.exitCode === null && Date.now() < deadline, `${name} does not listen on ${port}:\n${receiver.output}`);
      await new Promise((done) => setTimeout(done, 200));
    }
    receivers.push({ name, port, receiver });
  }
  await upsert('HOOKED-1', 'Hooked mug');
  for (const { receiver } of receivers) await receiver.waitFor(/^item\.created HOOKED-1 verified$/m);
  // A delivery with a wrong signature is refused: the receivers verify rather than print.
  for (const { name, port } of receivers) {
    const forged = await fetch(`http://127.0.0.1:${port}/hook`, {
      method: 'POST', body: '{"id":"x","type":"item.created","resourceId":"FORGED"}',
      headers: { 'content-type': 'application/json', 'x-service-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` },
    });
    assert.equal(forged.status, 400, name);
  }
  for (const { name, receiver } of receivers) assert.doesNotMatch(receiver.output, /FORGED/, name);
});

test('the kafkajs reader mirrors the changelog and prints the events', async () => {
  const snippet = found.get('kafka-reader');
  assert.ok(snippet);
  await writeFile(join(dir, 'reader.mjs'), snippet.code);
  const reader = start('kafka-reader', process.execPath, ['reader.mjs'], {
    KAFKA_BROKERS: service.kafka.brokers.join(','),
    KAFKA_TOPIC_PREFIX: service.config.kafkaTopicPrefix,
    GROUP_ID: `docs-reader-${runId()}-${process.pid}`,
  });
  await upsert('READ-1', 'Read mug');
  await call('DELETE', '/items/erp/READ-1');
  const key = JSON.stringify([tenant.catalogId, 'erp', 'READ-1']);
  await reader.waitFor(/^event item\.created READ-1$/m);
  await reader.waitFor(/^event item\.deleted READ-1$/m);
  await reader.waitFor(new RegExp(`^item ${escape(key)} Read mug$`, 'm'));
  await reader.waitFor(new RegExp(`^deleted ${escape(key)}$`, 'm'));
});

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
