// Fails (exit 1) when asyncapi.yaml does not parse as a valid AsyncAPI 3 document, its ./openapi.yaml references included.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { DiagnosticSeverity, Parser } from '@asyncapi/parser';
import type { AsyncAPIDocumentInterface, Diagnostic } from '@asyncapi/parser';

export const ASYNCAPI_PATH = fileURLToPath(new URL('../asyncapi.yaml', import.meta.url));

/**
 * The document at `path`, parsed and resolved, and every diagnostic. References resolve from the
 * file system only: a remote one is answered with an empty document (the parser's own http reader
 * would fetch it) and reported as an error, so the check runs offline and depends on no other host.
 */
export async function parseAsyncApi(path = ASYNCAPI_PATH): Promise<{ document: AsyncAPIDocumentInterface | undefined; diagnostics: Diagnostic[] }> {
  const remote: string[] = [];
  // Ordered before the parser's default readers, which are only tried when these return nothing.
  const refuse = (schema: 'http' | 'https') => ({
    schema, order: 1, read: (uri: { toString(): string }) => { remote.push(uri.toString()); return '{}'; },
  });
  const parser = new Parser({ __unstable: { resolver: { resolvers: [refuse('http'), refuse('https')] } } });
  const { document, diagnostics } = await parser.parse(await readFile(path, 'utf8'), { source: path });
  return {
    document,
    diagnostics: [
      ...diagnostics,
      ...remote.map((uri): Diagnostic => ({
        code: 'remote-reference', source: path, message: `remote reference ${uri}: only files next to the document are allowed`,
        path: [], severity: DiagnosticSeverity.Error, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
      })),
    ],
  };
}

/** `path:line:column severity code message`, the line and column 1-based. */
export function formatDiagnostic(diagnostic: Diagnostic): string {
  const severity = ['error', 'warning', 'info', 'hint'][diagnostic.severity] ?? String(diagnostic.severity);
  const { line, character } = diagnostic.range.start;
  const where = diagnostic.path.length > 0 ? ` (at ${diagnostic.path.join('.')})` : '';
  return `${diagnostic.source ?? 'asyncapi.yaml'}:${line + 1}:${character + 1} ${severity} ${diagnostic.code} ${diagnostic.message}${where}`;
}

if (import.meta.main) {
  const { diagnostics } = await parseAsyncApi();
  const errors = diagnostics.filter((d) => d.severity === DiagnosticSeverity.Error);
  if (errors.length > 0) {
    console.error(`asyncapi.yaml is not a valid AsyncAPI document (${errors.length} error${errors.length === 1 ? '' : 's'}):`);
    for (const diagnostic of diagnostics) console.error(`  ${formatDiagnostic(diagnostic)}`);
    process.exit(1);
  }
  if (process.argv.includes('--verbose')) for (const diagnostic of diagnostics) console.log(`  ${formatDiagnostic(diagnostic)}`);
  const notes = diagnostics.length === 0 ? '' : ` (${diagnostics.length} warning or info diagnostic${diagnostics.length === 1 ? '' : 's'}: --verbose lists them)`;
  console.log(`asyncapi.yaml is a valid AsyncAPI document${notes}.`);
}
