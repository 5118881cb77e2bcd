// POST /imports with a source address: the request checked, and the job made queued at once (no upload, no start).
import type { ImportJob, ImportSource } from '../../generated/client.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import type { Db } from '../../platform/db/sql.ts';
import { validationError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { assertCapacity, findJob, importPath } from './jobs.ts';
import { sourceUrlProblem } from './source.ts';
import { insertSourceJob } from './source-store.ts';
import { jobView } from './view.ts';

// Headers the service sets itself for the request: a caller's would break it.
const OWN_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'upgrade', 'te', 'trailer', 'keep-alive',
  'proxy-connection', 'if-none-match', 'if-modified-since', 'range']);

/** The job for `source`, queued with its message; what the address holds is its consumer's to find out. */
export async function createSourceImport(
  db: Db, secrets: SecretBox, catalogId: string, source: ImportSource, dryRun: boolean, allowPrivate: boolean,
): Promise<ImportJob> {
  let url: URL;
  try {
    url = new URL(source.url);
  } catch {
    throw validationError([{ path: 'source.url', message: 'must be an absolute URL' }]);
  }
  const problem = sourceUrlProblem(url, allowPrivate);
  if (problem) throw validationError([{ path: 'source.url', message: problem }]);
  if (url.username !== '' || url.password !== '') {
    throw validationError([{ path: 'source.url', message: 'must not hold credentials: send them in source.headers, which are kept secret' }]);
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(source.headers ?? {})) {
    const lower = name.toLowerCase();
    if (OWN_HEADERS.has(lower)) throw validationError([{ path: `source.headers.${name}`, message: 'is set by the service' }]);
    // What Node's HTTP client sends (its checkInvalidHeaderChar): anything else would fail the fetch later, as "unreachable".
    if (/[^\t\x20-\x7e\x80-\xff]/.test(value)) {
      throw validationError([{ path: `source.headers.${name}`, message: 'must hold only characters a header can carry: no line breaks, control characters or characters past U+00FF' }]);
    }
    headers[lower] = value;
  }
  return db.transactional(async (tx) => {
    await assertCapacity(tx, catalogId);
    const id = newId();
    await insertSourceJob(tx, secrets, { id, catalogId, dryRun, fileSizeBytes: 0, storagePath: importPath(catalogId, id) },
      { url, headers, ifChanged: source.ifChanged ?? false });
    return jobView(await findJob(tx, catalogId, id));
  });
}
