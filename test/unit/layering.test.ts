// The code's layering rules (docs/design.md, "Architecture"): which folders may import which, no module-level configuration, files a screenful or a few.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const LAYERS = ['app', 'handlers', 'consumers', 'domain', 'platform', 'cli', 'scripts', 'bench', 'console'] as const;
type Layer = (typeof LAYERS)[number];

/** What each folder must never import. `test/` is off limits to all but the benchmarks, which reuse its servers. */
const FORBIDDEN: Record<Layer, readonly string[]> = {
  // platform/ is how the service talks to the world and knows nothing of the product.
  platform: ['app', 'handlers', 'consumers', 'domain', 'cli', 'scripts', 'bench', 'console'],
  // domain/ is what the product does, reached through doors it does not know.
  domain: ['app', 'handlers', 'consumers', 'cli', 'scripts', 'bench', 'console'],
  // The doors call domain/; they neither call each other nor know what built them.
  handlers: ['app', 'consumers', 'cli', 'scripts', 'bench', 'console'],
  consumers: ['app', 'handlers', 'cli', 'scripts', 'bench', 'console'],
  // The composition root builds everything and is built by the command line alone.
  app: ['cli', 'bench', 'console'],
  scripts: ['app', 'handlers', 'consumers', 'domain', 'cli', 'bench', 'console'],
  cli: ['bench', 'console'],
  bench: ['console'],
  // The browser console's only door to the service is the generated client (its built files are served, never imported).
  console: ['app', 'handlers', 'consumers', 'domain', 'platform', 'cli', 'scripts', 'bench'],
};

/** Module-level `let`s that hold state of the process, not configuration, with the reason each is allowed. */
const MODULE_STATE: Record<string, string> = {
  'platform/ids.ts': 'the UUIDv7 generator: the last timestamp, its sequence and a pool of random bytes',
  'platform/memory.ts': 'whether the consumer heap is already held (once per process)',
  'platform/kafka/kafkajs-quirks.ts': 'whether the timer warning filter is installed (once per process)',
  'domain/media/image.ts': 'sharp and file-type, loaded on first use (a process that never ingests never loads them)',
  'domain/items/payload.ts': 'the item validator, compiled from the contract on first use',
  'platform/tracing.ts': 'the OpenTelemetry SDK, loaded and started once per process only when OTEL_* configures an exporter',
};

const MAX_LINES = 300;
// Files whose length is their nature: schema history and the Deno smoke check are excluded by folder.
const LONG_FILES_ALLOWED = (path: string) => path.startsWith('platform/db/migrations/');

function sourceFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.tsx?$/.test(entry.name) && dir !== 'console/dist') files.push(path);
    }
  };
  for (const layer of LAYERS) walk(layer);
  return files.sort();
}

const layerOf = (path: string): string => path.split('/')[0]!;

/** Relative specifiers of static, dynamic and side-effect imports and of re-exports. */
function importsOf(path: string, text: string): string[] {
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g)]
    .map((match) => match[1] ?? match[2] ?? match[3]!);
  return specifiers
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => relative(ROOT, resolve(ROOT, dirname(path), specifier)));
}

const files = sourceFiles();

test('no folder imports a folder it must not (platform knows nothing of the product; domain nothing of its doors)', () => {
  const broken: string[] = [];
  for (const path of files) {
    const layer = layerOf(path) as Layer;
    const forbidden = layer === 'bench' ? FORBIDDEN[layer] : [...FORBIDDEN[layer], 'test'];
    for (const target of importsOf(path, readFileSync(join(ROOT, path), 'utf8'))) {
      if (forbidden.includes(layerOf(target))) broken.push(`${path} -> ${target}`);
    }
  }
  assert.deepEqual(broken, []);
});

test('the import scanner sees the imports it must judge (a rule that sees nothing cannot fail)', () => {
  const sample = `import type { A } from '../domain/a.ts';\nimport { b } from './b.ts';\nexport { c } from '../handlers/c.ts';\nconst d = await import('../consumers/d.ts');\nimport '../scripts/e.ts';`;
  assert.deepEqual(importsOf('platform/x.ts', sample), ['domain/a.ts', 'platform/b.ts', 'handlers/c.ts', 'consumers/d.ts', 'scripts/e.ts']);
  assert.ok(files.length > 100, `only ${files.length} files found`);
});

test('no module-level mutable configuration: a module-level let is state of the process, listed with its reason', () => {
  const unexplained: string[] = [];
  for (const path of files) {
    if (!['app', 'platform', 'domain', 'handlers', 'consumers'].includes(layerOf(path))) continue;
    const text = readFileSync(join(ROOT, path), 'utf8');
    if (/^(?:export\s+)?(?:let|var)\s/m.test(text) && !(path in MODULE_STATE)) unexplained.push(path);
    if (/^export\s+function\s+configure[A-Z]/m.test(text)) unexplained.push(`${path} (a configure… setter)`);
  }
  assert.deepEqual(unexplained, []);
  for (const path of Object.keys(MODULE_STATE)) assert.ok(files.includes(path), `${path} is listed but gone: drop it from the list`);
});

test(`every source file says what it owns on its first line and stays within ${MAX_LINES} lines`, () => {
  const unnamed: string[] = [];
  const long: string[] = [];
  for (const path of files) {
    const text = readFileSync(join(ROOT, path), 'utf8');
    if (!text.startsWith('// ')) unnamed.push(path);
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_LINES && !LONG_FILES_ALLOWED(path)) long.push(`${path}: ${lines} lines`);
  }
  assert.deepEqual(unnamed, []);
  assert.deepEqual(long, []);
});
