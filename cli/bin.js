#!/usr/bin/env node
// The installed `catalog` bin: runs the TypeScript entry point unbuilt. A Node that cannot strip
// types (before 22.18: a system Node 20 that npx or a link picks up) hands over to the project's Node 24.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('./main.ts', import.meta.url));
if (process.features.typescript) {
  await import(main);
} else {
  const node = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  const run = spawnSync(node, [main, ...process.argv.slice(2)], { stdio: 'inherit' });
  if (run.error) {
    console.error(`catalog: this Node (${process.version}) cannot run TypeScript, and the project's Node 24 is missing (${run.error.message}): run npm install in ${fileURLToPath(new URL('..', import.meta.url))}`);
  }
  process.exitCode = run.status ?? 1;
}
