// Retry: a new, already queued job over only the failed lines of a finished job, copied byte for byte.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { ImportRetryCreated } from '../../generated/client.ts';
import type { Actor } from '../../platform/actor.ts';
import type { Db } from '../../platform/db/sql.ts';
import { newId } from '../../platform/ids.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import { conflict } from '../../platform/errors.ts';
import { failedLineNumbers, insertQueuedJob } from './job-store.ts';
import { IMPORT_CONTENT_TYPE, assertCapacity, findJob, importPath } from './jobs.ts';
import { recordAudit } from '../audit/audit-log.ts';
import { TERMINAL, jobView } from './view.ts';

const LF = 0x0a;

export async function retryImport(db: Db, storage: ObjectStorage, catalogId: string, jobId: string, actor: Actor): Promise<ImportRetryCreated> {
  const original = await findJob(db, catalogId, jobId);
  if (!TERMINAL.has(original.status)) {
    throw conflict(`job is ${original.status}; only a finished job can be retried`, [{ path: 'status', message: `is ${original.status}` }]);
  }
  const failedLines = await failedLineNumbers(db, jobId);
  if (failedLines.length === 0) throw conflict('job has no failed lines to retry', [{ path: 'errorCount', message: 'is 0' }]);
  await assertCapacity(db, catalogId, false);

  const newJobId = newId();
  const storagePath = importPath(catalogId, newJobId);
  const folder = await mkdtemp(join(tmpdir(), 'catalog-retry-'));
  try {
    const file = join(folder, 'lines.jsonl');
    const out = createWriteStream(file);
    await copyLines(await storage.read(original.storage_path), new Set(failedLines), out);
    out.end();
    await finished(out);
    const sizeBytes = (await stat(file)).size;
    await storage.write(storagePath, createReadStream(file), sizeBytes, IMPORT_CONTENT_TYPE);
    try {
      const job = await db.transactional(async (tx) => {
        await assertCapacity(tx, catalogId);
        await insertQueuedJob(tx, { id: newJobId, catalogId, dryRun: original.dry_run, fileSizeBytes: sizeBytes, storagePath }, jobId);
        await recordAudit(tx, actor, {
          catalogId, action: 'import.retried', resourceType: 'import', resourceId: jobId, before: null, after: { retryJobId: newJobId, lines: failedLines.length },
        });
        return jobView(await findJob(tx, catalogId, newJobId));
      });
      return { jobId: newJobId, retryOf: jobId, storagePath, job };
    } catch (error) {
      await storage.remove(storagePath).catch(() => undefined);
      throw error;
    }
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** Streams `source`, writing the lines whose 1-based numbers are in `wanted`, each ending in LF. */
export async function copyLines(source: Readable, wanted: ReadonlySet<number>, out: Writable): Promise<void> {
  let lineNumber = 1;
  let lineOpen = false;
  const write = async (bytes: Buffer) => {
    if (!out.write(bytes)) await new Promise((resolve) => out.once('drain', resolve));
  };
  for await (const chunk of source as AsyncIterable<Buffer>) {
    let start = 0;
    while (start < chunk.length) {
      const lf = chunk.indexOf(LF, start);
      const end = lf < 0 ? chunk.length : lf + 1;
      if (wanted.has(lineNumber)) await write(Buffer.from(chunk.subarray(start, end)));
      if (lf < 0) {
        lineOpen = true;
        break;
      }
      lineOpen = false;
      lineNumber += 1;
      start = end;
    }
  }
  // The file's last line had no LF: end it, so lines stay apart.
  if (lineOpen && wanted.has(lineNumber)) await write(Buffer.from([LF]));
}
