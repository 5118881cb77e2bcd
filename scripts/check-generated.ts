// Fails (exit 1) when generated/client.ts is not what `npm run generate` makes from openapi.yaml.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientPath, generateClient } from './generate-client.ts';

const fresh = await generateClient();
const freshPath = join(await mkdtemp(join(tmpdir(), 'catalog-client-')), 'client.ts');
await writeFile(freshPath, fresh);

let committed = '';
try {
  committed = await readFile(clientPath, 'utf8');
} catch {
  console.error(`generated/client.ts is missing. Run \`npm run generate\` and commit it.`);
  process.exit(1);
}

if (committed !== fresh) {
  const a = committed.split('\n');
  const b = fresh.split('\n');
  let line = 0;
  while (line < a.length && line < b.length && a[line] === b[line]) line++;
  console.error(
    [
      'generated/client.ts is stale: it differs from what openapi.yaml generates.',
      `First difference at line ${line + 1}:`,
      `  committed: ${a[line] ?? '<end of file>'}`,
      `  expected:  ${b[line] ?? '<end of file>'}`,
      `Fresh output: ${freshPath}`,
      'Run `npm run generate` and commit generated/client.ts.',
    ].join('\n'),
  );
  process.exit(1);
}
console.log('generated/client.ts is up to date.');
