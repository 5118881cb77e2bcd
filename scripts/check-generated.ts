// Fails (exit 1) when a file in generated/ is not what `npm run generate` makes from openapi.yaml.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { clientPath, generateClient } from './generate-client.ts';
import { generateServerTypes, serverTypesPath } from './generate-server-types.ts';

const outputs = [
  { path: clientPath, generate: generateClient },
  { path: serverTypesPath, generate: generateServerTypes },
];

let stale = false;
for (const { path, generate } of outputs) {
  const name = `generated/${basename(path)}`;
  const fresh = await generate();
  const freshPath = join(await mkdtemp(join(tmpdir(), 'catalog-generated-')), basename(path));
  await writeFile(freshPath, fresh);

  let committed: string | undefined;
  try {
    committed = await readFile(path, 'utf8');
  } catch {
    console.error(`${name} is missing. Run \`npm run generate\` and commit it.`);
    stale = true;
    continue;
  }
  if (committed === fresh) {
    console.log(`${name} is up to date.`);
    continue;
  }
  const a = committed.split('\n');
  const b = fresh.split('\n');
  let line = 0;
  while (line < a.length && line < b.length && a[line] === b[line]) line++;
  console.error(
    [
      `${name} is stale: it differs from what openapi.yaml generates.`,
      `First difference at line ${line + 1}:`,
      `  committed: ${a[line] ?? '<end of file>'}`,
      `  expected:  ${b[line] ?? '<end of file>'}`,
      `Fresh output: ${freshPath}`,
      `Run \`npm run generate\` and commit ${name}.`,
    ].join('\n'),
  );
  stale = true;
}
if (stale) process.exit(1);
