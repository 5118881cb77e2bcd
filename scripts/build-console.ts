// Builds the browser console (console/) into console/dist: one hashed script and stylesheet, each
// with gzip and brotli copies, and a manifest naming them. Run by `npm install` (prepare).
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('../console/', import.meta.url));
export const consoleDist = join(root, 'dist');

export interface ConsoleManifest {
  script: string;
  style: string;
  icon: string;
}

export async function buildConsole(): Promise<ConsoleManifest> {
  // Files are named by their content and the manifest replaced whole, so a service reading the
  // folder while another build runs (a second test run) sees one build or the other.
  await mkdir(consoleDist, { recursive: true });
  const result = await build({
    entryPoints: [join(root, 'main.tsx'), join(root, 'styles.css')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    outdir: consoleDist,
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
  const script = outputs.find((name) => name.endsWith('.js'));
  const style = outputs.find((name) => name.endsWith('.css'));
  if (!script || !style) throw new Error(`esbuild wrote ${outputs.join(', ')}: expected one .js and one .css`);
  // The icon too is named by its content, so every file under /console/assets can be cached for good.
  const svg = await readFile(join(root, 'icon.svg'));
  const icon = `icon-${createHash('sha256').update(svg).digest('hex').slice(0, 8)}.svg`;
  await writeFile(join(consoleDist, icon), svg);
  for (const name of [script, style, icon]) {
    const body = await readFile(join(consoleDist, name));
    await writeFile(join(consoleDist, `${name}.gz`), gzipSync(body, { level: 9 }));
    await writeFile(join(consoleDist, `${name}.br`), brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
  }
  const manifest = { script, style, icon };
  const partial = join(consoleDist, `.manifest-${process.pid}.json`);
  await writeFile(partial, `${JSON.stringify(manifest, null, 2)}\n`);
  await rename(partial, join(consoleDist, 'manifest.json'));
  await removeOldBuilds(manifest);
  return manifest;
}

// Earlier builds' files, once no page loaded a minute ago could still ask for them.
async function removeOldBuilds(manifest: ConsoleManifest): Promise<void> {
  const current = new Set(Object.values(manifest).flatMap((name) => [name, `${name}.gz`, `${name}.br`]));
  for (const name of await readdir(consoleDist)) {
    if (current.has(name) || name.startsWith('.') || name === 'manifest.json') continue;
    const path = join(consoleDist, name);
    if (Date.now() - (await stat(path)).mtimeMs > 60_000) await rm(path, { force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const manifest = await buildConsole();
  process.stdout.write(`console built: console/dist/${manifest.script}, console/dist/${manifest.style}\n`);
}
