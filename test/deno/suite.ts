// `npm run test:deno`: the integration files that start the service run again with the service under Deno (TEST_RUNTIME=deno).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const FOLDER = 'test/integration';

// A file talks to a started service when it starts one through the helpers that follow TEST_RUNTIME.
const STARTS_THE_SERVICE = /\b(startTestService|startImportService|startMediaBed|testRuntime)\b/;

// Started services that still run under Node only, for CI's time on 2 cores (docs/design.md, "Runtimes").
const NODE_ONLY = new Set(['kafka-cluster-service.test.ts']);

const files = readdirSync(join(ROOT, FOLDER)).filter((name) => name.endsWith('.test.ts')).sort();
const chosen = files.filter((name) => !NODE_ONLY.has(name) && STARTS_THE_SERVICE.test(readFileSync(join(ROOT, FOLDER, name), 'utf8')));
const left = files.filter((name) => !chosen.includes(name));
process.stdout.write(`under Deno: ${chosen.length} integration files; left to the Node run, as they start no service of the runtime's: ${left.join(', ')}\n`);

const run = spawnSync(process.execPath, [
  '--test', '--test-concurrency=2', '--test-global-setup=test/helpers/global-setup.ts', ...chosen.map((name) => `${FOLDER}/${name}`),
], { cwd: ROOT, stdio: 'inherit', env: { ...process.env, TEST_RUNTIME: 'deno' } });
process.exit(run.status ?? 1);
