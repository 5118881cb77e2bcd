// A second generator: openapi-typescript's types (default settings) for the contract, and a caller's usage file type-checked against them.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { runId } from '../helpers/test-run.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const GENERATOR_PACKAGE = join(ROOT, 'test/generators/openapi-typescript');
// Its own package (TypeScript 5 for the generator, installed beside it by the project's `npm
// install`); the project's TypeScript 7 checks the usage.
const generatorCli = join(GENERATOR_PACKAGE, 'node_modules/openapi-typescript/bin/cli.js');
const TSC = join(ROOT, 'node_modules/.bin/tsc');

test('openapi-typescript with its defaults gives types a caller uses as they are', async (t) => {
  // Inside the checkout, so that the usage file resolves openapi-fetch from its node_modules.
  const dir = join(ROOT, '.cache', `openapi-typescript-${runId()}-${process.pid}`);
  await mkdir(dir, { recursive: true });
  t.after(() => rm(dir, { recursive: true, force: true }));
  await copyFile(join(GENERATOR_PACKAGE, 'usage.ts'), join(dir, 'usage.ts'));
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'esnext', module: 'nodenext', moduleResolution: 'nodenext', noEmit: true,
      allowImportingTsExtensions: true, strict: true, noUncheckedIndexedAccess: true, types: [],
    },
    files: ['usage.ts'],
  }));

  const generated = await run(process.execPath, [generatorCli, join(ROOT, 'openapi.yaml'), '-o', join(dir, 'catalog.ts')]);
  assert.doesNotMatch(generated.stderr, /error/i, generated.stderr);

  const checked = await run(TSC, ['-p', dir]).then(
    () => ({ ok: true, output: '' }),
    (error: { stdout: string; stderr: string }) => ({ ok: false, output: `${error.stdout}${error.stderr}` }));
  assert.equal(checked.output, '', 'type errors in a caller of the openapi-typescript types');
  assert.ok(checked.ok);
});
