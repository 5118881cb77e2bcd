// `catalog import FILE.jsonl [--wait] [--errors OUT.jsonl]`: the whole bulk-import dance through the generated client.
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { access } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import type { RequestOpts } from '@oazapfts/runtime';
import * as api from '../generated/client.ts';
import type { ImportJob } from '../generated/client.ts';
import { splitFile } from './import-parts.ts';
import { progressView } from './import-progress.ts';
import type { FilePart } from './import-parts.ts';
import { UsageError } from './usage-error.ts';

// The spec's per-file limit; CATALOG_IMPORT_PART_BYTES lowers it (tests split small files).
const MAX_FILE_BYTES = 100 * 1024 * 1024;
const TERMINAL = new Set(['completed', 'completed_with_errors', 'failed', 'cancelled']);
const API_PREFIX = '/api/v1/catalog';

type Env = Record<string, string | undefined>;
type Answer = { status: number; headers: Headers; data: unknown };

const err = (line: string) => process.stderr.write(`${line}\n`);
const out = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class ApiFailure extends Error {}

// A service that refuses connections or has no such host is not coming back in a minute: after
// this many tries the command stops and says where it looked.
const CONNECT_ATTEMPTS = 3;

// Deno's fetch names the cause in its message only ("…tcp connect error: Connection refused (os error 111)").
const CODES_IN_MESSAGES: ReadonlyArray<readonly [RegExp, string]> = [
  [/connection refused/i, 'ECONNREFUSED'], [/dns error|failed to lookup address/i, 'ENOTFOUND'], [/no route to host|host is unreachable/i, 'EHOSTUNREACH'],
];

/** Why a request got no answer, in words: the cause's code (connection refused, host not found…). */
function noAnswer(error: unknown): { said: string; unreachable: boolean } {
  const chain: unknown[] = [];
  for (let e = error; e instanceof Error && chain.length < 5; e = e.cause) chain.push(e);
  const code = chain.map((e) => (e as { code?: string }).code).find((c) => typeof c === 'string')
    ?? CODES_IN_MESSAGES.find(([pattern]) => chain.some((e) => pattern.test((e as Error).message)))?.[1];
  const said = code === 'ECONNREFUSED' ? 'connection refused' : code === 'ENOTFOUND' || code === 'EAI_AGAIN' ? 'host not found' : code ?? (error as Error).message;
  return { said, unreachable: code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' };
}

/**
 * Calls the API until it answers something other than 429 or a 5xx: waits `Retry-After` on a
 * 429, and min(2^attempt, 60) s with jitter where no Retry-After is given (the spec's guidance).
 * No answer at all names the address and the cause; an unreachable one stops after a few tries.
 */
async function call<A extends Answer>(what: string, request: () => Promise<A>, where: string): Promise<A> {
  for (let attempt = 1; ; attempt += 1) {
    let answer: A | undefined;
    let failure: { said: string; unreachable: boolean } | undefined;
    try {
      answer = await request();
    } catch (error) {
      failure = noAnswer(error);
      if (attempt >= 8 || (failure.unreachable && attempt >= CONNECT_ATTEMPTS)) {
        throw new ApiFailure(`${what}: no answer from ${where} (${failure.said}). Is the service running there? `
          + 'Set CATALOG_API_URL to its address (default http://127.0.0.1:8080).');
      }
    }
    if (answer && answer.status !== 429 && answer.status < 500) return answer;
    if (answer && answer.status >= 500 && attempt >= 8) return answer;
    const retryAfter = Number(answer?.headers.get('retry-after'));
    const seconds = Number.isFinite(retryAfter) && retryAfter > 0
      ? retryAfter
      : Math.min(2 ** attempt, 60) * (0.5 + Math.random() / 2);
    err(`${what}: ${answer ? `HTTP ${answer.status}` : `no answer from ${where} (${failure!.said})`}; waiting ${Math.ceil(seconds)} s before trying again`);
    await sleep(seconds * 1000);
  }
}

/** The data of a success envelope, or an ApiFailure quoting the error envelope. */
function dataOf<T>(what: string, answer: Answer, status: number): T {
  const body = answer.data as { success?: boolean; data?: T; error?: { code?: string; message?: string; details?: Array<{ path: string; message: string }> } };
  if (answer.status === status && body?.success) return body.data as T;
  const details = body?.error?.details?.map((d) => `; ${d.path}: ${d.message}`).join('') ?? '';
  throw new ApiFailure(`${what}: HTTP ${answer.status} ${body?.error?.code ?? ''} ${body?.error?.message ?? JSON.stringify(body)}${details}`);
}

function clientOptions(env: Env): RequestOpts {
  const key = env.CATALOG_API_KEY;
  if (!key) throw new UsageError('CATALOG_API_KEY must hold an API key with the bulk_import:manage scope');
  const base = (env.CATALOG_API_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
  return { baseUrl: base.endsWith(API_PREFIX) ? base : `${base}${API_PREFIX}`, headers: { authorization: `Bearer ${key}` } };
}

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

interface StartedPart {
  part: FilePart;
  jobId: string;
  job?: ImportJob;
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

/** Every line error of every job, as JSONL, with line numbers of the whole file and the job's id. */
async function writeErrors(opts: RequestOpts, started: StartedPart[], path: string): Promise<number> {
  const stream = createWriteStream(path);
  let written = 0;
  for (const { jobId, part, job } of started) {
    if (!job || job.errorCount === 0) continue;
    let cursor: string | undefined;
    do {
      const page = dataOf<{ errors: api.ImportLineError[]; nextCursor: string | null }>(`errors of ${jobId}`, await call(
        `errors of ${jobId}`, () => api.listImportErrors(jobId, { limit: 1000, ...(cursor ? { cursor } : {}) }, opts), opts.baseUrl!), 200);
      for (const error of page.errors) {
        if (!stream.write(`${JSON.stringify({ jobId, ...error, lineNumber: part.firstLine - 1 + error.lineNumber })}\n`)) {
          await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
        }
        written += 1;
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  stream.end();
  await finished(stream);
  return written;
}

export async function runImportCommand(args: string[], env: Env = process.env): Promise<number> {
  const { values, positionals } = parseArgs({
    args, allowPositionals: true, strict: true, options: { wait: { type: 'boolean', default: false }, errors: { type: 'string' } },
  });
  if (positionals.length !== 1) throw new UsageError('import takes exactly one FILE.jsonl');
  // `npm run catalog -- import …` runs in the project folder; paths are meant from where it was typed.
  const base = env.INIT_CWD ?? process.cwd();
  const file = resolve(base, positionals[0]!);
  const errorsPath = values.errors === undefined ? undefined : resolve(base, values.errors);
  const opts = clientOptions(env);
  await access(file).catch(() => { throw new UsageError(`cannot read ${file}`); });
  const maxBytes = Number(env.CATALOG_IMPORT_PART_BYTES) > 0 ? Number(env.CATALOG_IMPORT_PART_BYTES) : MAX_FILE_BYTES;
  const parts = await splitFile(file, maxBytes);
  if (parts.length > 1) err(`${positionals[0]} is over ${maxBytes} bytes: importing it as ${parts.length} jobs`);
  try {
    const started: StartedPart[] = [];
    for (const [index, part] of parts.entries()) started.push(await startPart(opts, file, part, index, parts.length));
    // --errors needs the finished jobs, so it waits too.
    if (!values.wait && errorsPath === undefined) return 0;
    await waitForAll(opts, started);
    const sum = { total: 0, succeeded: 0, unchanged: 0, failed: 0 };
    for (const { jobId, job } of started) {
      const c = job!.counts;
      out(`${jobId}\t${job!.status}\ttotal ${c.total}\tsucceeded ${c.succeeded}\tunchanged ${c.unchanged}\tfailed ${c.failed}${job!.failureReason ? `\t${job!.failureReason}` : ''}`);
      for (const k of ['total', 'succeeded', 'unchanged', 'failed'] as const) sum[k] += c[k];
    }
    if (errorsPath !== undefined) err(`wrote ${await writeErrors(opts, started, errorsPath)} line errors to ${errorsPath}`);
    out(`total ${sum.total}, succeeded ${sum.succeeded}, unchanged ${sum.unchanged}, failed ${sum.failed}`);
    return started.every((s) => s.job!.status === 'completed' || s.job!.status === 'completed_with_errors') ? 0 : 1;
  } catch (error) {
    if (!(error instanceof ApiFailure)) throw error;
    err(`catalog: ${error.message}`);
    return 1;
  }
}
