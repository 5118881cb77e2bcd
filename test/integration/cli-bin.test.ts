// The `catalog` bin runs from any folder: with the project's Node, and handed over to it from an older system Node.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'cli/bin.js');
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

test('the bin prints the version from a folder outside the checkout', async () => {
  const { stdout } = await run(process.execPath, [BIN, '--version'], { cwd: tmpdir() });
  assert.equal(stdout.trim(), `catalog ${version}`);
});

test('a system Node that cannot strip types hands over to the project\'s Node', async (t) => {
  const system = '/usr/bin/node';
  const systemVersion = await run(system, ['-p', 'process.features.typescript ? "strips" : process.version']).then((r) => r.stdout.trim(), () => '');
  if (systemVersion === '' || systemVersion === 'strips') return t.skip(`no older system Node at ${system}`);
  const { stdout } = await run(system, [BIN, '--version'], { cwd: tmpdir() });
  assert.equal(stdout.trim(), `catalog ${version}`);
});
