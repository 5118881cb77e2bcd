// `catalog import FILE.jsonl | --from URL | --retry JOB_ID | --job JOB_ID [--wait] [--errors F] [--results F] [--failed-lines F]`: the whole bulk-import dance through the generated client.
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { access } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import type { RequestOpts } from '@oazapfts/runtime';
import * as api from '../generated/client.ts';
import type { ImportJob, ImportRetryCreated } from '../generated/client.ts';
import { ApiFailure, call, clientOptions, dataOf, err, out, sleep } from './import-api.ts';
import type { Env } from './import-api.ts';
import { tellFailures, writeErrors, writeFailedLines, writeResults } from './import-files.ts';
import type { StartedPart } from './import-files.ts';
import { splitFile } from './import-parts.ts';
import { progressView } from './import-progress.ts';
import type { FilePart } from './import-parts.ts';
import { UsageError } from './usage-error.ts';

// The spec's per-file limit; CATALOG_IMPORT_PART_BYTES lowers it (tests split small files).
const MAX_FILE_BYTES = 100 * 1024 * 1024;
const TERMINAL = new Set(['completed', 'completed_with_errors', 'failed', 'cancelled']);

/**
 * The catalog's unfinished jobs, once, when five of them keep this one from starting: a job
 * stuck in `awaiting_upload` holds its place until its upload window lapses, unless cancelled.
 */
async function tellRunning(opts: RequestOpts, label: string): Promise<void> {
  const running: ImportJob[] = [];
  for (const status of ['awaiting_upload', 'queued', 'processing'] as const) {
    const answer = await call(`${label}: list jobs`, () => api.listImports({ status, limit: 10 }, opts), opts.baseUrl!);
    if (answer.status === 200) running.push(...(answer.data as { data: { imports: ImportJob[] } }).data.imports);
  }
  err(`${label}: this catalog already has 5 unfinished import jobs (the most it runs at once):`);
  for (const job of running) {
    const until = job.status === 'awaiting_upload' && job.uploadExpiresAt ? `, upload window until ${job.uploadExpiresAt}` : '';
    err(`  ${job.id}  ${job.status}  created ${job.createdAt}${until}`);
  }
  err(`  one that will not finish can be cancelled: POST ${opts.baseUrl}/imports/<jobId>/cancel with a bulk_import:manage key`);
}

/** Create (with an Idempotency-Key, so retries never make two jobs), upload, start. */
async function startPart(opts: RequestOpts, file: string, part: FilePart, index: number, count: number): Promise<StartedPart> {
  const label = count > 1 ? `part ${index + 1}/${count}` : 'import';
  const size = part.end - part.start;
  const idempotencyKey = randomUUID();
  let created: { jobId: string; uploadUrl: string; contentType: string };
  let toldRunning = false;
  for (;;) {
    const answer = await call(`${label}: create job`, () => api.createImport({ fileSizeBytes: size }, { idempotencyKey }, opts), opts.baseUrl!);
    const body = answer.data as { error?: { details?: Array<{ path: string }> } };
    // Five jobs are already running: wait for one of them to finish (the limit of docs/imports.md, "Jobs and their rules").
    if (answer.status === 409 && body.error?.details?.[0]?.path === 'imports') {
      if (!toldRunning) await tellRunning(opts, label);
      toldRunning = true;
      err(`${label}: 5 import jobs are running in this catalog; waiting 5 s for one to finish`);
      await sleep(5000);
      continue;
    }
    created = dataOf(`${label}: create job`, answer, 201);
    break;
  }
  const uploaded = await call(`${label}: upload`, async () => {
    const response = await fetch(created.uploadUrl, {
      method: 'PUT',
      headers: { 'content-type': created.contentType, 'content-length': String(size) },
      body: Readable.toWeb(createReadStream(file, { start: part.start, end: part.end - 1 })) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    return { status: response.status, headers: response.headers, data: await response.text() };
  }, new URL(created.uploadUrl).origin);
  if (uploaded.status !== 200) throw new ApiFailure(`${label}: upload refused: HTTP ${uploaded.status} ${uploaded.data.slice(0, 500)}`);
  dataOf(`${label}: start`, await call(`${label}: start`, () => api.startImport(created.jobId, opts), opts.baseUrl!), 202);
  out(`${created.jobId}\tqueued\t${label}\tlines from ${part.firstLine}\t${size} bytes`);
  return { part, jobId: created.jobId };
}

/** When the earliest of the jobs began processing, in epoch ms; undefined while none has. */
function firstStart(jobs: readonly ImportJob[]): number | undefined {
  const starts = jobs.flatMap((j) => (j.startedAt ? [Date.parse(j.startedAt)] : []));
  return starts.length > 0 ? Math.min(...starts) : undefined;
}

/** Polls the unfinished jobs and shows their progress together (import-progress.ts). */
async function waitForAll(opts: RequestOpts, started: StartedPart[]): Promise<void> {
  const view = progressView();
  // Quick at first (small files finish in a second), then about one request a second in all.
  let delay = 250;
  try {
    for (;;) {
      for (const entry of started.filter((s) => !s.job || !TERMINAL.has(s.job.status))) {
        entry.job = dataOf<ImportJob>(`job ${entry.jobId}`, await call(`job ${entry.jobId}`, () => api.getImport(entry.jobId, opts), opts.baseUrl!), 200);
      }
      const jobs = started.map((s) => s.job!);
      view.update({
        processed: jobs.reduce((n, j) => n + j.counts.processed, 0),
        total: jobs.reduce((n, j) => n + j.counts.total, 0),
        failed: jobs.reduce((n, j) => n + j.counts.failed, 0),
        status: [...new Set(jobs.map((j) => j.status))].join(', '),
        startedAt: firstStart(jobs),
      });
      if (jobs.every((j) => TERMINAL.has(j.status))) return;
      delay = Math.min(delay * 1.5, Math.max(1000, 700 * jobs.filter((j) => !TERMINAL.has(j.status)).length));
      await sleep(delay);
    }
  } finally {
    view.stop();
  }
}

/** A job the command did not upload: its own file, numbered from 1. */
const WHOLE_FILE: FilePart = { start: 0, end: 0, firstLine: 1 };

/** The jobs to follow: the file's parts, started; a retry of a finished job; or jobs already running. */
/** `Name: value` → [name, value]. */
function header(given: string): [string, string] {
  const colon = given.indexOf(':');
  if (colon <= 0) throw new UsageError(`--header takes "Name: value", not ${JSON.stringify(given.slice(0, 40))}`);
  return [given.slice(0, colon).trim(), given.slice(colon + 1).trim()];
}

interface Sources {
  retry?: string | undefined;
  job?: string[] | undefined;
  from?: string | undefined;
  header?: string[] | undefined;
  'if-changed'?: boolean | undefined;
}

async function startJobs(opts: RequestOpts, values: Sources, file: string | undefined, shown: string, env: Env): Promise<StartedPart[]> {
  if (values.from !== undefined) {
    const source = { url: values.from, headers: Object.fromEntries((values.header ?? []).map(header)), ifChanged: values['if-changed'] ?? false };
    const answer = await call('import from address', () => api.createImport({ source }, { idempotencyKey: randomUUID() }, opts), opts.baseUrl!);
    const job = dataOf<ImportJob>('import from address', answer, 202);
    out(`${job.id}\tqueued\tfrom ${job.source?.url ?? values.from}`);
    return [{ part: WHOLE_FILE, jobId: job.id }];
  }
  if (values.retry !== undefined) {
    const what = `retry of ${values.retry}`;
    const created = dataOf<ImportRetryCreated>(what, await call(what, () => api.retryImport(values.retry!, opts), opts.baseUrl!), 201);
    out(`${created.jobId}\tqueued\tretry of ${values.retry}\t${created.job.fileSizeBytes} bytes`);
    return [{ part: WHOLE_FILE, jobId: created.jobId }];
  }
  if (values.job !== undefined) return values.job.map((jobId) => ({ part: WHOLE_FILE, jobId }));
  await access(file!).catch(() => { throw new UsageError(`cannot read ${file}`); });
  const maxBytes = Number(env.CATALOG_IMPORT_PART_BYTES) > 0 ? Number(env.CATALOG_IMPORT_PART_BYTES) : MAX_FILE_BYTES;
  const parts = await splitFile(file!, maxBytes);
  if (parts.length > 1) err(`${shown} is over ${maxBytes} bytes: importing it as ${parts.length} jobs`);
  const started: StartedPart[] = [];
  for (const [index, part] of parts.entries()) started.push(await startPart(opts, file!, part, index, parts.length));
  return started;
}

export async function runImportCommand(args: string[], env: Env = process.env): Promise<number> {
  const { values, positionals } = parseArgs({
    args, allowPositionals: true, strict: true, options: {
      wait: { type: 'boolean', default: false }, errors: { type: 'string' }, results: { type: 'string' }, 'failed-lines': { type: 'string' },
      retry: { type: 'string' }, job: { type: 'string', multiple: true },
      from: { type: 'string' }, header: { type: 'string', multiple: true }, 'if-changed': { type: 'boolean' },
    },
  });
  const sources = positionals.length + [values.retry, values.job, values.from].filter((v) => v !== undefined).length;
  if (sources !== 1 || positionals.length > 1) throw new UsageError('import takes exactly one of FILE.jsonl, --from URL, --retry JOB_ID or --job JOB_ID');
  if (values.from === undefined && (values.header !== undefined || values['if-changed'] !== undefined)) {
    throw new UsageError('--header and --if-changed go with --from URL');
  }
  // `npm run catalog -- import …` runs in the project folder; paths are meant from where it was typed.
  const base = env.INIT_CWD ?? process.cwd();
  const path = (given: string | undefined) => (given === undefined ? undefined : resolve(base, given));
  const [file, errorsPath, resultsPath, failedLinesPath] = [positionals[0], values.errors, values.results, values['failed-lines']].map(path);
  const opts = clientOptions(env);
  try {
    const started = await startJobs(opts, values, file, positionals[0] ?? '', env);
    // The files need the finished jobs, so they wait too; so does following jobs already running.
    const writes = errorsPath !== undefined || resultsPath !== undefined || failedLinesPath !== undefined;
    if (!values.wait && !writes && values.job === undefined) return 0;
    await waitForAll(opts, started);
    const sum = { total: 0, succeeded: 0, unchanged: 0, failed: 0 };
    for (const { jobId, job } of started) {
      const c = job!.counts;
      const note = job!.failureReason ?? (job!.source?.unchanged ? 'the source is unchanged since the last import from it: not read' : null);
      out(`${jobId}\t${job!.status}\ttotal ${c.total}\tsucceeded ${c.succeeded}\tunchanged ${c.unchanged}\tfailed ${c.failed}${note ? `\t${note}` : ''}`);
      for (const k of ['total', 'succeeded', 'unchanged', 'failed'] as const) sum[k] += c[k];
    }
    if (errorsPath !== undefined) err(`wrote ${await writeErrors(opts, started, errorsPath)} line errors to ${errorsPath}`);
    if (resultsPath !== undefined) err(`wrote the results of ${await writeResults(opts, started, resultsPath)} lines to ${resultsPath}`);
    if (failedLinesPath !== undefined) {
      await writeFailedLines(opts, started, failedLinesPath);
      err(`wrote the ${sum.failed} failed lines, as the file held them, to ${failedLinesPath}`);
    }
    await tellFailures(opts, started, failedLinesPath);
    out(`total ${sum.total}, succeeded ${sum.succeeded}, unchanged ${sum.unchanged}, failed ${sum.failed}`);
    return started.every((s) => s.job!.status === 'completed' || s.job!.status === 'completed_with_errors') ? 0 : 1;
  } catch (error) {
    if (!(error instanceof ApiFailure)) throw error;
    err(`catalog: ${error.message}`);
    return 1;
  }
}
