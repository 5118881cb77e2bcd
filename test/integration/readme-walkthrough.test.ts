// The walkthrough of docs/getting-started.md (linked from the README), run as written by bash against a fresh service, so that it cannot drift.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import sharp from 'sharp';
import { freePort } from '../../scripts/free-port.ts';
import { spawnService } from '../helpers/spawned-service.ts';
import { runId } from '../helpers/test-run.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const WALKTHROUGH = join(ROOT, 'docs/getting-started.md');
// The walkthrough waits for the service's own background work (an import of 500 lines, one
// image, webhook deliveries whose first retry comes 5 s after a miss): minutes at the most on a
// busy machine, far less usually.
const SCRIPT_TIMEOUT_MS = 300_000;

// The lines the test changes, each once: the service's address and the stand-in's port are this run's.
const API_LINE = /^export CATALOG_API_URL=http:\/\/127\.0\.0\.1:8080\/api\/v1\/catalog(\s.*)?$/m;
const MERCHANT_LINE = /^export MERCHANT_PORT=4000(\s.*)?$/m;

/** The `sh` blocks after `<!-- walkthrough -->` markers, in order, and the one that starts the service. */
function walkthrough(page: string): { start: string; script: string } {
  const blocks = [...page.matchAll(/<!-- walkthrough(: the service)? -->\n```sh\n([\s\S]*?)```/g)];
  const start = blocks.filter((block) => block[1]).map((block) => block[2]!.trim());
  assert.equal(start.length, 1, 'one block starts the service');
  const script = blocks.filter((block) => !block[1]).map((block) => block[2]).join('\n');
  assert.ok(blocks.length >= 5, 'the walkthrough has its blocks');
  return { start: start[0]!, script };
}

/** `A=1 B=2 npm start` → { A: '1', B: '2' }; anything else there is a walkthrough the test cannot start. */
function startSettings(line: string): Record<string, string> {
  const match = /^((?:[A-Z_]+=\S+ )*)npm start$/.exec(line);
  assert.ok(match, `the service is started with settings and npm start: ${line}`);
  return Object.fromEntries(match[1]!.trim().split(/\s+/).filter(Boolean).map((pair) => pair.split('=') as [string, string]));
}

test('the walkthrough runs as written against a fresh service', async (t) => {
  const { start, script } = walkthrough(await readFile(WALKTHROUGH, 'utf8'));
  // Node only: the walkthrough starts the service with `npm start`, as a reader does (docs/design.md, "Runtimes").
  const service = await spawnService(import.meta.filename, 'node', { env: startSettings(start) });
  t.after(() => service.stop());
  const merchantPort = await freePort();
  assert.equal(script.match(new RegExp(API_LINE, 'gm'))?.length, 1);
  assert.equal(script.match(new RegExp(MERCHANT_LINE, 'gm'))?.length, 1);
  const runnable = script
    .replace(API_LINE, `export CATALOG_API_URL=${service.apiUrl}`)
    .replace(MERCHANT_LINE, `export MERCHANT_PORT=${merchantPort}`);

  // A folder inside the checkout: npm finds the project from there, as from its root.
  const dir = join(ROOT, '.cache', `walkthrough-${runId()}-${process.pid}`);
  await mkdir(dir, { recursive: true });
  t.after(() => rm(dir, { recursive: true, force: true }));
  const shell = spawn('bash', ['-e', '-o', 'pipefail', '-c', runnable], {
    cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DATABASE_URL: service.databaseUrl },
  });
  let stdout = '';
  let stderr = '';
  shell.stdout.on('data', (chunk: Buffer) => { stdout += chunk; });
  shell.stderr.on('data', (chunk: Buffer) => { stderr += chunk; });
  // The whole group: the stand-in runs in the background of the script.
  const killGroup = () => { try { process.kill(-shell.pid!, 'SIGKILL'); } catch { /* gone */ } };
  t.after(killGroup);
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; killGroup(); }, SCRIPT_TIMEOUT_MS);
  // 'close' comes once every process holding the output is gone: the script and its stand-in.
  const code = await new Promise<number | null>((done) => shell.once('close', done));
  clearTimeout(timer);
  const merchantLog = existsSync(join(dir, 'merchant.log')) ? await readFile(join(dir, 'merchant.log'), 'utf8') : '';
  const shown = `--- stdout ---\n${stdout}\n--- stderr ---\n${stderr.slice(-4000)}\n--- merchant.log ---\n${merchantLog}`;
  assert.ok(!timedOut, `the walkthrough (or a process it left running) still ran after ${SCRIPT_TIMEOUT_MS / 1000} s\n${shown}`);
  assert.equal(code, 0, shown);

  const lines = stdout.split('\n');
  const at = (text: string) => lines.indexOf(text);
  // created, unchanged, updated: in that order
  assert.ok(at('created') >= 0 && at('created') < at('unchanged') && at('unchanged') < at('updated'), shown);
  assert.ok(lines.includes('{"created":2,"updated":0,"unchanged":0,"failed":1}'), shown);
  assert.match(stdout, /"path":"items\.1\.price"/);
  assert.match(stdout, /total 500, succeeded 500, unchanged 0, failed 0/);
  assert.ok(lines.includes('200'), 'the upload was accepted');
  assert.ok(lines.includes('completed'), shown);
  assert.match(stdout, /"total":500,.*"unchanged":500/);
  assert.ok(lines.includes('ingested'), shown);
  assert.ok(lines.some((line) => line.startsWith(`${service.url}/storage/v1/download/`)), shown);

  // The stored image and its thumbnail, fetched without a key by their signed addresses.
  const original = await sharp(join(dir, 'mug.jpg')).metadata();
  assert.deepEqual([original.format, original.width, original.height], ['jpeg', 1200, 900]);
  const thumbnail = await sharp(join(dir, 'mug-thumb.webp')).metadata();
  assert.equal(thumbnail.format, 'webp');
  assert.ok(Math.max(thumbnail.width!, thumbnail.height!) <= 200, `thumbnail ${thumbnail.width}×${thumbnail.height}`);

  // The deliveries the walkthrough waits for, each verified with the secret the webhook was created with.
  for (const expected of ['item.created MUG-1 verified', 'item.updated MUG-1 verified']) {
    assert.ok(merchantLog.includes(expected), `${expected}\n${shown}`);
  }
  assert.match(merchantLog, /^media\.ingested \S+ verified/m);
  assert.match(merchantLog, /^import\.completed \S+ verified/m);
  assert.doesNotMatch(merchantLog, /rejected|refused|error/);
});
