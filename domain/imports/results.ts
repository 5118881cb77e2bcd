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
import type { FileLine, ReadPosition } from './line-reader.ts';
import { OUTCOMES, keptLineText } from './line-results.ts';
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
  from_offset: string | null;
  outcomes: string;
  ids: Array<string | null> | null;
  changed: Array<string[] | null> | null;
  lines: string | null;
}

// A row whose lines are all rendered already needs nothing from the file.
const ALL_RENDERED = /^r*$/;

/**
 * The job's file, read forward: a row that starts where the last one ended (as the rows of a job
 * do) reads on, so a results file reads the job's file once; one that starts elsewhere opens it
 * again at its place (one ranged request with the s3 driver).
 */
function fileReader(storage: ObjectStorage, path: string) {
  let open: { stream: Readable; lines: AsyncGenerator<FileLine>; end: number } | undefined;
  const close = () => {
    open?.stream.destroy();
    open = undefined;
  };
  return {
    /** The next non-empty line; `from`: the row's place, for a row's first line. */
    async next(from?: ReadPosition): Promise<FileLine | undefined> {
      if (from && open?.end !== from.offset) {
        close();
        const stream = await storage.read(path, from.offset);
        open = { stream, lines: readLines(stream, from), end: from.offset };
      }
      const read = await open!.lines.next();
      if (read.done) return undefined;
      open!.end = read.value.endOffset;
      return read.value;
    },
    close,
  };
}

/**
 * A batch's results from its row (migration 0022): each line of the job's file from the row's
 * place, by position in `outcomes`, is the next rendered line, or rendered now from the line's
 * own item (its identity and content hash, as when it was imported), its id and, for an
 * update, its changed fields.
 */
async function* rowLines(file: ReturnType<typeof fileReader>, row: ResultRow): AsyncGenerator<string> {
  const rendered = row.lines?.split('\n') ?? [];
  if (ALL_RENDERED.test(row.outcomes)) {
    for (const line of rendered) yield `${line}\n`;
    return;
  }
  let nextRendered = 0;
  let nextChanged = 0;
  for (let position = 0; position < row.outcomes.length; position += 1) {
    const line = await file.next(position === 0 ? { line: row.first_line - 1, offset: Number(row.from_offset) } : undefined);
    if (!line) throw new Error(`the job's file ends before line ${row.first_line}'s batch does`);
    const code = row.outcomes[position]!;
    if (code === 'r') {
      yield `${rendered[nextRendered]}\n`;
      nextRendered += 1;
      continue;
    }
    const parsed = parseLine(line);
    const normalized = parsed.ok ? normalizeItem(parsed.value) : undefined;
    // A line kept as a code is one that wrote or matched its item: it parses and normalizes as it did then.
    if (!normalized?.ok) throw new Error(`line ${line.lineNumber} of the job's file no longer reads as the item it imported`);
    const changed = code === 'u' ? row.changed?.[nextChanged] ?? null : null;
    if (code === 'u') nextChanged += 1;
    yield `${keptLineText(line.lineNumber, OUTCOMES[code]!, normalized.item, row.ids![position]!, changed)}\n`;
  }
}

/** The results file of an ended job: its batches' rows in line order, each line ending in LF. */
export async function resultsFile(db: Db, storage: ObjectStorage, catalogId: string, jobId: string): Promise<AsyncIterable<string>> {
  const job = await endedJob(db, catalogId, jobId);
  return (async function* () {
    const file = fileReader(storage, job.storage_path);
    try {
      let after = 0;
      for (;;) {
        const rows = await query<ResultRow>(db,
          `SELECT first_line, from_offset, outcomes, ids, changed, lines FROM import_results WHERE job_id = $1 AND first_line > $2
            ORDER BY first_line LIMIT $3`, [jobId, after, ROWS_A_PAGE]);
        for (const row of rows) yield* rowLines(file, row);
        if (rows.length < ROWS_A_PAGE) return;
        after = rows.at(-1)!.first_line;
      }
    } finally {
      file.close();
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
