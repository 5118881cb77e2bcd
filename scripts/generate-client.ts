// Generates the TypeScript client (generated/client.ts) from openapi.yaml with oazapfts, with
// fixed options, so `npm run generate` and `npm run check:generated` produce the same bytes.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { generateSource } from 'oazapfts';

export const contractPath = fileURLToPath(new URL('../openapi.yaml', import.meta.url));
export const clientPath = fileURLToPath(new URL('../generated/client.ts', import.meta.url));

// `operations` (/healthz, /readyz, /metrics, /docs) and `storage` (the signed upload address)
// live outside the API prefix through path-level `servers`, which oazapfts ignores: generated
// functions would call the wrong URL. The upload is a plain `fetch(uploadUrl, { method: 'PUT' })`.
const excludedTags = ['operations', 'storage'];

// Operations whose success body is not JSON. @oazapfts/runtime's fetchJson JSON.parses every
// response whose content type contains "json", which includes `application/x-ndjson`, so a
// multi-line export would throw; these use fetchText (status + raw text; parse errors yourself).
const textOperations = ['exportItems', 'getImportResults', 'getImportFailedLines'];

const banner = ' * DO NOT MODIFY - This file has been generated using oazapfts.';

export async function generateClient(): Promise<string> {
  // enumStyle 'union' is the default; spelled out because 'enum' would emit non-erasable syntax.
  let source = await generateSource(contractPath, { exclude: excludedTags, enumStyle: 'union' });
  for (const operationId of textOperations) source = useFetchText(source, operationId);
  if (!source.includes(banner)) throw new Error('oazapfts banner not found; update scripts/generate-client.ts');
  return source.replace(
    banner,
    `${banner}\n * Regenerate with \`npm run generate\` (scripts/generate-client.ts); CI runs \`npm run check:generated\`.`,
  );
}

/** Rewrites `return oazapfts.fetchJson<…>(url, …)` of one function into `oazapfts.fetchText(url, …)`. */
function useFetchText(source: string, operationId: string): string {
  const start = source.indexOf(`export function ${operationId}(`);
  const call = start < 0 ? -1 : source.indexOf('oazapfts.fetchJson<', start);
  const next = source.indexOf('\nexport function ', start + 1);
  const typeEnd = call < 0 ? -1 : source.indexOf('>(`/', call);
  if (start < 0 || call < 0 || typeEnd < 0 || (next >= 0 && typeEnd > next)) {
    throw new Error(`cannot find the fetchJson call of ${operationId}; update scripts/generate-client.ts`);
  }
  return `${source.slice(0, call)}oazapfts.fetchText(${source.slice(typeEnd + 2)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(clientPath, await generateClient());
  console.log(`wrote ${clientPath}`);
}
