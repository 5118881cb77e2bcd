// What `catalog import` writes once its jobs ended: line errors, every line's result and the failed lines' bytes, and on stderr the failures by kind with the next step.
import { createWriteStream } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { RequestOpts } from '@oazapfts/runtime';
import * as api from '../generated/client.ts';
import type { ImportJob, ImportLineError } from '../generated/client.ts';
import { ApiFailure, call, dataOf, err } from './import-api.ts';
import type { FilePart } from './import-parts.ts';

/** A job the command follows: one part of the file (a retry's or an attached job's file is its own). */
export interface StartedPart {
  part: FilePart;
  jobId: string;
  job?: ImportJob;
}

// The messages shown after an import with failures: enough to see what went wrong.
const FIRST_MESSAGES = 3;

async function write(stream: WriteStream, text: string | Buffer): Promise<void> {
  if (!stream.write(text)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
}

async function closed(stream: WriteStream): Promise<void> {
  stream.end();
  await finished(stream);
}

/** Every line error of a job, page by page. */
async function* lineErrors(opts: RequestOpts, jobId: string): AsyncGenerator<ImportLineError> {
  let cursor: string | undefined;
  do {
    const page = dataOf<{ errors: ImportLineError[]; nextCursor: string | null }>(`errors of ${jobId}`, await call(
      `errors of ${jobId}`, () => api.listImportErrors(jobId, { limit: 1000, ...(cursor ? { cursor } : {}) }, opts), opts.baseUrl!), 200);
    yield* page.errors;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
}

/** Every line error of every job, as JSONL, with line numbers of the whole file and the job's id. */
export async function writeErrors(opts: RequestOpts, started: readonly StartedPart[], path: string): Promise<number> {
  const stream = createWriteStream(path);
  let written = 0;
  for (const { jobId, part, job } of started) {
    if (!job || job.errorCount === 0) continue;
    for await (const error of lineErrors(opts, jobId)) {
      await write(stream, `${JSON.stringify({ jobId, ...error, lineNumber: part.firstLine - 1 + error.lineNumber })}\n`);
      written += 1;
    }
  }
  await closed(stream);
  return written;
}

/** A job's streamed file (results or failed lines), through the retrying call. */
async function jobFile(opts: RequestOpts, jobId: string, file: 'results' | 'failed-lines'): Promise<Readable> {
  const what = `${file} of ${jobId}`;
  const answer = await call(what, async () => {
    const response = await fetch(`${opts.baseUrl}/imports/${jobId}/${file}`, { headers: opts.headers as Record<string, string> });
    return { status: response.status, headers: response.headers, data: response.status === 200 ? response : await response.text() };
  }, opts.baseUrl!);
  if (answer.status !== 200) throw new ApiFailure(`${what}: HTTP ${answer.status} ${String(answer.data).slice(0, 500)}`);
  return Readable.fromWeb((answer.data as Response).body! as import('node:stream/web').ReadableStream);
}

/** Every job's results file as one, with line numbers of the whole file and each line's job id. */
export async function writeResults(opts: RequestOpts, started: readonly StartedPart[], path: string): Promise<number> {
  const stream = createWriteStream(path);
  let written = 0;
  for (const { jobId, part } of started) {
    for await (const line of createInterface({ input: await jobFile(opts, jobId, 'results'), crlfDelay: Infinity })) {
      if (line === '') continue;
      const result = JSON.parse(line) as { lineNumber: number };
      await write(stream, `${JSON.stringify({ jobId, ...result, lineNumber: part.firstLine - 1 + result.lineNumber })}\n`);
      written += 1;
    }
  }
  await closed(stream);
  return written;
}

/** Every job's failed lines, byte for byte, in the file's order. */
export async function writeFailedLines(opts: RequestOpts, started: readonly StartedPart[], path: string): Promise<void> {
  const stream = createWriteStream(path);
  for (const { jobId, job } of started) {
    if (!job || job.errorCount === 0) continue;
    for await (const chunk of await jobFile(opts, jobId, 'failed-lines')) await write(stream, chunk as Buffer);
  }
  await closed(stream);
}

/**
 * After an import with failed lines, on stderr: how many of each kind, the first few messages
 * with their line numbers, and the next step (correct and import the failed lines, or retry them
 * as they were when what they depend on has changed).
 */
export async function tellFailures(opts: RequestOpts, started: readonly StartedPart[], failedLinesPath: string | undefined): Promise<void> {
  const failing = started.filter((s) => (s.job?.errorCount ?? 0) > 0);
  if (failing.length === 0) return;
  const kinds = new Map<string, number>();
  const first: string[] = [];
  for (const { jobId, part } of failing) {
    for await (const error of lineErrors(opts, jobId)) {
      kinds.set(error.errorType, (kinds.get(error.errorType) ?? 0) + 1);
      if (first.length < FIRST_MESSAGES) first.push(`  line ${part.firstLine - 1 + error.lineNumber}: ${error.errorMessage}`);
    }
  }
  err(`failed lines: ${[...kinds].map(([kind, n]) => `${kind} ${n}`).join(', ')}`);
  for (const line of first) err(line);
  const ids = failing.map((s) => s.jobId);
  const fetchThem = failedLinesPath === undefined
    ? `write them whole with \`catalog import --job ${ids.join(' --job ')} --failed-lines failed.jsonl\`, correct them and import that file`
    : `correct the lines in ${failedLinesPath} and import it: \`catalog import ${failedLinesPath} --wait\``;
  err(`next: ${fetchThem}; or, when the lines were right and what they depend on has changed since, `
    + `${ids.map((id) => `\`catalog import --retry ${id} --wait\``).join(' and ')}`);
}
