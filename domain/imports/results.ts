// A finished job's files: every line's result (the results file) and its failed lines' original bytes, streamed.
import { PassThrough } from 'node:stream';
import type { Readable } from 'node:stream';
import { query } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { conflict } from '../../platform/errors.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import { normalizeItem } from '../items/payload.ts';
import { failedLineNumbers } from './job-store.ts';
import type { JobRow } from './job-store.ts';
import { findJob } from './jobs.ts';
import { readLines } from './line-reader.ts';
import { knownLineText } from './line-results.ts';
import { parseLine } from './lines.ts';
import { copyLines } from './retry.ts';
import { TERMINAL } from './view.ts';

// Batches (rows of up to 500 lines) read at once: a bounded buffer whatever the job's size.
const ROWS_A_PAGE = 20;

/** The job, once it ended; a 409 before, since its files are not whole yet. */
async function endedJob(db: Db, catalogId: string, jobId: string): Promise<JobRow> {
  const job = await findJob(db, catalogId, jobId);
  if (!TERMINAL.has(job.status)) {
    throw conflict(`job is ${job.status}; its files are readable once it ended`, [{ path: 'status', message: `is ${job.status}` }]);
  }
  return job;
}

interface ResultRow {
  first_line: number;
  lines: string | null;
  from_offset: string | null;
  known_ids: string[] | null;
}

/** A run of lines proved stored: each read again from the job's file, its item's identity and hash from its bytes. */
async function* knownRun(storage: ObjectStorage, path: string, row: ResultRow): AsyncGenerator<string> {
  const ids = row.known_ids!;
  const offset = Number(row.from_offset);
  const stream = await storage.read(path, offset);
  let i = 0;
  try {
    for await (const line of readLines(stream, { line: row.first_line - 1, offset })) {
      const parsed = parseLine(line);
      const normalized = parsed.ok ? normalizeItem(parsed.value) : undefined;
      // A line proved stored is the one that wrote its item: it parses and normalizes as it did then.
      if (!normalized?.ok) throw new Error(`line ${line.lineNumber} of the job's file no longer reads as the item it stored`);
      yield `${knownLineText(line.lineNumber, normalized.item, ids[i]!)}\n`;
      i += 1;
      if (i === ids.length) return;
    }
  } finally {
    stream.destroy();
  }
}

/** The results file of an ended job: its batches' rows in line order, each line ending in LF. */
export async function resultsFile(db: Db, storage: ObjectStorage, catalogId: string, jobId: string): Promise<AsyncIterable<string>> {
  const job = await endedJob(db, catalogId, jobId);
  return (async function* () {
    let after = 0;
    for (;;) {
      const rows = await query<ResultRow>(db,
        `SELECT first_line, lines, from_offset, known_ids FROM import_results WHERE job_id = $1 AND first_line > $2
          ORDER BY first_line LIMIT $3`, [jobId, after, ROWS_A_PAGE]);
      for (const row of rows) {
        if (row.lines !== null) yield `${row.lines}\n`;
        else yield* knownRun(storage, job.storage_path, row);
      }
      if (rows.length < ROWS_A_PAGE) return;
      after = rows.at(-1)!.first_line;
    }
  })();
}

/** The failed lines of an ended job, copied byte for byte from its file. */
export async function failedLinesFile(db: Db, storage: ObjectStorage, catalogId: string, jobId: string): Promise<Readable> {
  const job = await endedJob(db, catalogId, jobId);
  const out = new PassThrough();
  const wanted = new Set(await failedLineNumbers(db, jobId));
  if (wanted.size === 0) {
    out.end();
    return out;
  }
  const source = await storage.read(job.storage_path);
  copyLines(source, wanted, out).then(() => out.end(), (error: unknown) => {
    source.destroy();
    out.destroy(error as Error);
  });
  return out;
}
