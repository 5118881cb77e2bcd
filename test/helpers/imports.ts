// Import helpers for tests: build JSONL files, upload them to the signed address, run a job to its end.
import assert from 'node:assert/strict';
import type { RequestOpts } from '@oazapfts/runtime';
import * as api from '../../generated/client.ts';
import type { ImportJob, ImportLineError, ItemPayload } from '../../generated/client.ts';
import { QUEUED_GRACE_SECONDS, SWEEP_MS } from '../../consumers/import/index.ts';
import { freePort } from '../../scripts/free-port.ts';
import { expectData } from './client.ts';
import { checkedFetch } from './contract-check.ts';
import { waitWhileProgressing } from './progress.ts';
import { startTestService } from './service.ts';
import type { TestService } from './service.ts';

/**
 * The service on a known free port: signed upload addresses are built from PUBLIC_BASE_URL,
 * which defaults to http://HOST:PORT and so cannot follow PORT=0.
 */
export async function startImportService(file: string, overrides: Record<string, string> = {}): Promise<TestService> {
  return startTestService(file, { PORT: String(await freePort()), ...overrides });
}

export const TERMINAL = ['completed', 'completed_with_errors', 'failed', 'cancelled'];

export const item = (id: string, overrides: Partial<ItemPayload> = {}): ItemPayload => ({
  externalSystem: 'erp', externalId: id, sku: `SKU-${id}`, name: `Item ${id}`, price: 10, category: { name: 'Imported' }, ...overrides,
});

/** JSONL bytes: objects are serialized, strings and buffers go in as they are (for broken lines). */
export function jsonl(lines: Array<object | string | Buffer>, eol = '\n'): Buffer {
  return Buffer.concat(lines.map((line) => Buffer.concat([
    Buffer.isBuffer(line) ? line : Buffer.from(typeof line === 'string' ? line : JSON.stringify(line)), Buffer.from(eol),
  ])));
}

/** PUT to an upload address exactly as a client would (no API key); checked against the contract. */
export async function upload(uploadUrl: string, body: Buffer | string, contentType = 'application/x-ndjson') {
  return checkedFetch(uploadUrl, { method: 'PUT', headers: { 'content-type': contentType }, body: typeof body === 'string' ? body : new Uint8Array(body) });
}

/**
 * No progress (status and counts unchanged) for this long fails a wait on a job: well past the
 * longest pause an import takes by design (a job left queued waits QUEUED_GRACE_SECONDS for a
 * sweeper, which runs every SWEEP_MS; a counting pass over a large file shows no count), a safety
 * net rather than a speed assumption.
 */
export const IMPORT_STALL_MS = Math.max(60_000, 4 * (QUEUED_GRACE_SECONDS * 1000 + SWEEP_MS));

/** Polls the job until `until` holds (a terminal status by default); fails only when it stops moving for `stallMs`. */
export async function waitForJob(
  opts: RequestOpts, jobId: string, until: (job: ImportJob) => boolean = (j) => TERMINAL.includes(j.status), stallMs = IMPORT_STALL_MS,
): Promise<ImportJob> {
  let job: ImportJob | undefined;
  await waitWhileProgressing(`job ${jobId}`, async () => until(job = expectData(await api.getImport(jobId, opts), 200)),
    async () => ({ status: job!.status, counts: job!.counts }), stallMs);
  return job!;
}

/** Create → upload → start → wait for a terminal status. */
export async function runImport(opts: RequestOpts, file: Buffer, options: { dryRun?: boolean } = {}): Promise<ImportJob> {
  const created = expectData(await api.createImport({ fileSizeBytes: file.length, dryRun: options.dryRun ?? false }, {}, opts), 201);
  const put = await upload(created.uploadUrl, file);
  assert.equal(put.response.status, 200, JSON.stringify(put.body));
  expectData(await api.startImport(created.jobId, opts), 202);
  return waitForJob(opts, created.jobId);
}

/** Every line error of a job, following nextCursor. */
export async function allErrors(opts: RequestOpts, jobId: string, errorType?: ImportLineError['errorType'], limit = 1000): Promise<ImportLineError[]> {
  const errors: ImportLineError[] = [];
  let cursor: string | undefined;
  do {
    const page = expectData(await api.listImportErrors(jobId, { ...(errorType ? { errorType } : {}), limit, ...(cursor ? { cursor } : {}) }, opts), 200);
    errors.push(...page.errors);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return errors;
}
