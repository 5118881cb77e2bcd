// Processes one import job: the counting pass, then batches of 100 lines through the upsert path, resumable at any moment.
import type { EntityManager } from '@mikro-orm/postgresql';
import { setImmediate as nextTurn } from 'node:timers/promises';
import pg from 'pg';
import type { Orm } from '../../platform/db/orm.ts';
import { prepared, query } from '../../platform/db/sql.ts';
import { storableText } from '../../platform/db/storable-text.ts';
import type { Logger } from '../../platform/log/logger.ts';
import type { ObjectStorage } from '../../platform/storage/storage.ts';
import { normalizeItem } from '../items/payload.ts';
import type { NormalizeResult } from '../items/payload.ts';
import { identityKey, itemsByFingerprint } from '../items/store.ts';
import type { Lookup, WriteRider, WriteRiderSql } from '../items/store.ts';
import { RiderRefused, UnguardedWriteFailed, addNormalized, upsertPrepared } from '../items/upsert.ts';
import type { PreparedItems, UpsertEntry } from '../items/upsert.ts';
import { lineFingerprint } from './fingerprint.ts';
import { IMPORT_LOCK_SPACE, MAX_FILE_BYTES, finishJob } from './jobs.ts';
import { readLines, scanFile } from './line-reader.ts';
import type { FileLine } from './line-reader.ts';
import { errorMessageOf, errorTypeOf, parseLine, rawLineOf } from './lines.ts';
import type { LineError } from './lines.ts';
import { JOB_SELECT } from './view.ts';
import type { JobRow } from './view.ts';

// The spec's transaction size.
export const BATCH_LINES = 100;
// Lines read at once while a re-import finds its lines stored already: their fingerprints are
// looked up in one statement and, as long as they all prove stored, their counters and cursor
// are recorded in one. Lines that write are still committed 100 at a time.
const KNOWN_RUN_LINES = 5 * BATCH_LINES;
/** Second key space of the per-job processing lock (the first is per-catalog job creation). */
export const JOB_LOCK_SPACE = IMPORT_LOCK_SPACE + 1;

export interface ProcessDeps {
  readonly orm: Orm;
  readonly storage: ObjectStorage;
  readonly databaseUrl: string;
  readonly logger: Logger;
  /** Called between batches (the Kafka consumer's heartbeat). */
  readonly heartbeat?: () => Promise<void>;
  /** True once the process is shutting down: stop after the current batch (the cursor is committed). */
  readonly stopping?: () => boolean;
}

export type ProcessOutcome = 'finished' | 'stopped' | 'busy' | 'skipped';

class JobStopped extends Error {}

const loadJob = async (em: EntityManager, jobId: string, lock = false) =>
  (await em.execute<JobRow[]>(`${JOB_SELECT} WHERE j.id = ?${lock ? ' FOR UPDATE' : ''}`, [jobId]))[0];

/**
 * Runs a queued or processing job to its end. A session-level advisory lock on a connection of
 * its own makes one process at a time work on a job; the lock dies with a killed process, so
 * another one resumes from the cursor committed with the last batch.
 */
export async function processImport(deps: ProcessDeps, jobId: string): Promise<ProcessOutcome> {
  const lock = new pg.Client({ connectionString: deps.databaseUrl });
  // A lost lock connection must not crash the process; the cursor check in each batch then keeps
  // a second processor from double-counting.
  lock.on('error', (error) => deps.logger.warn({ err: error, jobId }, 'lost the import lock connection'));
  await lock.connect();
  try {
    const { rows } = await lock.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked', [JOB_LOCK_SPACE, jobId]);
    if (!rows[0]?.locked) return 'busy';
    const em = deps.orm.em.fork();
    let job = await loadJob(em, jobId);
    if (job?.status === 'queued') job = await begin(deps, job);
    if (job?.status !== 'processing') return 'skipped';
    return await run(deps, job);
  } finally {
    // Closing the session releases the advisory lock.
    await lock.end().catch(() => undefined);
  }
}

/** Ends a job that could not be processed at all, unless it was cancelled meanwhile. */
async function fail(deps: ProcessDeps, jobId: string, reason: string): Promise<undefined> {
  await deps.orm.em.fork().transactional(async (tx) => {
    const job = await loadJob(tx, jobId, true);
    if (job && (job.status === 'queued' || job.status === 'processing')) await finishJob(tx, job, 'failed', reason);
  });
  deps.logger.info({ jobId, reason }, 'import failed');
  return undefined;
}

/** queued → processing after the cheap counting pass that gives `total` (DESIGN §4). */
async function begin(deps: ProcessDeps, job: JobRow): Promise<JobRow | undefined> {
  const stored = await deps.storage.stat(job.storage_path);
  if (!stored) return fail(deps, job.id, 'the uploaded file is missing from storage');
  if (stored.sizeBytes > MAX_FILE_BYTES) return fail(deps, job.id, 'the file is over 100 MB');
  if (stored.sizeBytes > Number(job.file_size_bytes)) return fail(deps, job.id, 'the file is larger than the declared fileSizeBytes');
  const scan = await scanFile(deps.storage.readChunks(job.storage_path));
  if (scan.jsonArray) return fail(deps, job.id, 'the file is a JSON array, not JSONL (one JSON object per line)');
  if (scan.nonEmptyLines === 0) return fail(deps, job.id, 'the file has no non-empty lines');
  const em = deps.orm.em.fork();
  await em.execute(
    `UPDATE import_jobs SET status = 'processing', total = ?, started_at = now(), updated_at = now() WHERE id = ? AND status = 'queued'`,
    [scan.nonEmptyLines, job.id],
  );
  return loadJob(em, job.id);
}

/**
 * Two stages: while one batch is in the database, the next is read, parsed and validated, so the
 * consumer's CPU work overlaps Postgres's. Batches commit one after the other, in file order, and
 * each one's outcome is the one it would have had, had it begun after the batch before it
 * committed. Two batches of new lines can be in the database at once (see BatchTurn); any other
 * batch begins once the one before it committed, so its lookup sees everything it wrote.
 */
async function run(deps: ProcessDeps, job: JobRow): Promise<ProcessOutcome> {
  const offset = Number(job.resume_offset);
  const stream = await deps.storage.read(job.storage_path, offset);
  const cursor = { line: Number(job.resume_line) };
  // Read lines ahead unless the last batch committed was mostly lines already stored (a re-import).
  // Lines read ahead are expected to be new: their fingerprints are not looked up, and a line
  // stored already is found unchanged by the upsert's own lookup.
  let readAhead = true;
  let committing: Promise<void> | undefined;
  // The batch in flight when it may share the database with the next one, and the commit of the
  // batch before it.
  let overlappable: BatchAhead | undefined;
  let committingBefore: Promise<void> | undefined;
  // Settles once the batch in flight will write no more items: when all its lines proved stored
  // already, or when it committed. From then on the next batch's fingerprints can be looked up,
  // while the batch in flight still records its counters.
  let itemsSettled: Promise<unknown> = Promise.resolve();
  const commitNext = async (batch: PreparedBatch) => {
    const known = batch.ahead ? Promise.resolve(NONE_KNOWN)
      : itemsSettled.then(() => itemsByFingerprint(deps.orm.em.fork(), job.catalog_id, batch.fingerprints));
    // Awaited by the commit, which may never start (a stop); this only keeps a failure meanwhile
    // from counting as unhandled. The same for `committing` below.
    known.catch(() => undefined);
    const keys = batch.ahead ? keysOf(batch.ahead) : undefined;
    const ahead = keys && overlappable && !sharesKeys(overlappable, keys) ? overlappable : undefined;
    if (committing) {
      await (ahead ? committingBefore : committing);
      if (deps.stopping?.()) throw new JobStopped();
      await deps.heartbeat?.();
    }
    const turn = batchTurn(ahead);
    const commit = commitBatch(deps, job, cursor, batch, known, turn).then((unchanged) => {
      readAhead = unchanged < batch.lines.length / 2;
    });
    commit.catch(() => undefined).finally(turn.wrote);
    committingBefore = committing;
    committing = commit;
    committing.catch(() => undefined);
    overlappable = keys && { keys, written: turn.written, committed: commit };
    itemsSettled = known.then((found) => (found.size === batch.lines.length ? undefined : commit)).catch(() => undefined);
  };
  let lines: FileLine[] = [];
  try {
    for await (const line of readLines(stream, { line: Number(job.resume_line), offset })) {
      lines.push(line);
      if (lines.length >= (readAhead ? BATCH_LINES : KNOWN_RUN_LINES)) {
        await commitNext(await prepareBatch(lines, readAhead));
        lines = [];
      }
    }
    if (lines.length > 0) await commitNext(await prepareBatch(lines, readAhead));
    // The last batch commits after the one before it.
    await committing;
  } catch (error) {
    stream.destroy();
    // Never leave a batch's transaction running behind the outcome.
    await Promise.allSettled([committingBefore, committing]);
    if (error instanceof JobStopped) return 'stopped';
    throw error;
  }
  return complete(deps, job.id);
}

const NONE_KNOWN: ReadonlyMap<number, string> = new Map();

/** What a batch of new lines can write: its items' identity keys and SKUs. */
interface BatchKeys {
  readonly identities: ReadonlySet<string>;
  readonly skus: ReadonlySet<string>;
}

function keysOf(lines: readonly LineItem[]): BatchKeys {
  const identities = new Set<string>();
  const skus = new Set<string>();
  for (const line of lines) {
    if (!line.ok || !line.normalized.ok) continue;
    const { item } = line.normalized;
    identities.add(identityKey(item.externalSystem, item.externalId));
    if (item.sku !== null) skus.add(item.sku);
  }
  return { identities, skus };
}

/** A batch of new lines in flight, as the batch after it sees it. */
interface BatchAhead {
  readonly keys: BatchKeys;
  /** Settles once its items are written: it holds every lock it will take on items, categories and brands. */
  readonly written: Promise<void>;
  /** Settles once it committed (rejects when it rolled back). */
  readonly committed: Promise<void>;
}

/** True when `keys` name one of the items or SKUs of the batch ahead: then the next batch waits for its commit. */
function sharesKeys(ahead: BatchAhead, keys: BatchKeys): boolean {
  for (const key of keys.identities) if (ahead.keys.identities.has(key)) return true;
  for (const sku of keys.skus) if (ahead.keys.skus.has(sku)) return true;
  return false;
}

/**
 * How a batch takes its turn in the database. Alone (no batch ahead), it began after the batch
 * before it committed. Behind a batch of new lines that shares none of its items or SKUs, it
 * begins while that one is still in the database:
 * - its lookup may run while the batch ahead writes; that batch changes none of the items it
 *   looks up, and can change a SKU's owner only by moving one of its own items to another SKU,
 *   so a lookup that found a SKU owned by one of the batch ahead's items is made again once that
 *   batch committed (`beforeWrite`);
 * - it writes once the batch ahead has written, so the only lock it can wait for is that of a
 *   category or brand the batch ahead created, released by that batch's commit, and that batch
 *   never waits for it;
 * - it records its counters and cursor once the batch ahead committed, and rolls back when that
 *   batch did, so batches commit in file order. A batch whose write carries its counters and
 *   cursor (commitInOneStatement) therefore writes only once the batch ahead committed, and
 *   writes nothing when that batch failed.
 */
interface BatchTurn {
  /** Settles once this batch's items are written (or its commit settled without writing). */
  readonly written: Promise<void>;
  readonly wrote: () => void;
  /** UpsertOptions.beforeWrite: waits for the batch ahead to have written; true to look up again after its commit. */
  readonly beforeWrite: (found: Lookup) => Promise<boolean>;
  /** The same for a write that commits the batch (commitInOneStatement): waits for the batch ahead to commit. */
  readonly beforeCommittingWrite: (found: Lookup) => Promise<boolean>;
  /** The batch ahead's commit (resolved when there is none). */
  readonly aheadCommitted: Promise<void>;
}

function batchTurn(ahead: BatchAhead | undefined): BatchTurn {
  let wrote!: () => void;
  const written = new Promise<void>((resolve) => {
    wrote = () => resolve();
  });
  let lookedAgain = false;
  const ownsAheadSku = (found: Lookup) => ahead !== undefined && [...found.skuOwners.values()].some((owner) => ahead.keys.identities.has(owner));
  const beforeWrite = async (found: Lookup): Promise<boolean> => {
    if (ahead === undefined || lookedAgain) return false;
    await ahead.written;
    if (!ownsAheadSku(found)) return false;
    lookedAgain = true;
    // Its failure fails this batch when it records its counters.
    await ahead.committed.catch(() => undefined);
    return true;
  };
  const beforeCommittingWrite = async (found: Lookup): Promise<boolean> => {
    if (ahead === undefined || lookedAgain) return false;
    // Its failure fails this batch before it writes anything.
    await ahead.committed;
    lookedAgain = true;
    return ownsAheadSku(found);
  };
  return { written, wrote, beforeWrite, beforeCommittingWrite, aheadCommitted: ahead?.committed ?? Promise.resolve() };
}

/** A line read: parsed, validated and normalized, or its line error. */
type LineItem = { ok: true; normalized: NormalizeResult } | { ok: false; error: LineError };

function itemOfLine(line: FileLine): LineItem {
  const parsed = parseLine(line);
  return parsed.ok ? { ok: true, normalized: normalizeItem(parsed.value) } : parsed;
}

interface PreparedBatch {
  readonly lines: readonly FileLine[];
  /** Each line's fingerprint; undefined for a line too long to hold. */
  readonly fingerprints: ReadonlyArray<string | undefined>;
  /** Each line read ahead, by position; absent when the batch is expected to be lines already stored. */
  readonly ahead?: readonly LineItem[];
}

// Lines handled between two turns of the event loop, so the batch in the database is not kept
// waiting for its next statement.
const PREPARE_SLICE = 10;

/** The CPU work of a batch ahead of its transaction: fingerprints, and reading each line if asked. */
async function prepareBatch(lines: readonly FileLine[], readAhead: boolean): Promise<PreparedBatch> {
  const fingerprints: Array<string | undefined> = [];
  const ahead: LineItem[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (i > 0 && i % PREPARE_SLICE === 0) await nextTurn();
    const line = lines[i]!;
    fingerprints.push(line.bytes === undefined ? undefined : lineFingerprint(line.bytes));
    if (readAhead) ahead.push(itemOfLine(line));
  }
  return readAhead ? { lines, fingerprints, ahead } : { lines, fingerprints };
}

/**
 * The lines of a batch that go through the upsert path, in file order. A line whose fingerprint
 * an item carries is the line that last wrote that item: it is unchanged, and is not even parsed.
 * Unless another line of the batch writes the same item: then it goes through the upsert path
 * too, so the item's lines still apply in file order.
 */
function linesToUpsert(batch: PreparedBatch, known: ReadonlyMap<number, string>) {
  const read: Array<LineItem | undefined> = batch.lines.map((line, i) => (known.has(i) ? undefined : batch.ahead?.[i] ?? itemOfLine(line)));
  const written = new Set<string>();
  for (const item of read) {
    if (item?.ok && item.normalized.ok) written.add(identityKey(item.normalized.item.externalSystem, item.normalized.item.externalId));
  }
  let unchanged = known.size;
  for (const [i, key] of known) {
    if (!written.has(key)) continue;
    unchanged -= 1;
    read[i] = batch.ahead?.[i] ?? itemOfLine(batch.lines[i]!);
  }
  const valueLines: FileLine[] = [];
  const lineErrors: LineError[] = [];
  const items: PreparedItems = { entries: [], valid: [] };
  read.forEach((item, i) => {
    if (item === undefined) return;
    if (!item.ok) {
      lineErrors.push(item.error);
      return;
    }
    addNormalized(items, item.normalized, valueLines.length, batch.fingerprints[i]);
    valueLines.push(batch.lines[i]!);
  });
  items.entries.length = valueLines.length;
  return { valueLines, items, lineErrors, unchanged };
}

interface BatchCounts {
  processed: number; succeeded: number; failed: number; unchanged: number; created: number; updated: number;
}

/**
 * Commits lines read, at most BATCH_LINES to a transaction: the lines' upserts, their line
 * errors, the counters and the resume cursor. The counter update only applies while the job is
 * still processing and its cursor is where this run left it; otherwise the transaction rolls back
 * and the run stops. Lines already stored write nothing but counters: a run of them (up to
 * KNOWN_RUN_LINES) is recorded by one statement, which is its transaction. `knownLines` are the
 * lines found stored already (itemsByFingerprint) before any of these was committed; they hold
 * until a transaction writes items, and the parts after it are looked up again. Returns how
 * many lines proved unchanged, by their fingerprint or by the upsert.
 */
async function commitBatch(
  deps: ProcessDeps, job: JobRow, cursor: { line: number }, batch: PreparedBatch, knownLines: Promise<ReadonlyMap<number, string>>,
  turn: BatchTurn,
): Promise<number> {
  // Looked up outside any transaction (read committed, it would see no more inside one), once
  // no earlier batch could still change an item.
  let known: ReadonlyMap<number, string> | undefined = await knownLines;
  let unchanged = 0;
  // The lines proved stored and not recorded yet: how many, and the last of them.
  let knownRun = { lines: 0, last: undefined as FileLine | undefined };
  for (let start = 0; start < batch.lines.length; start += BATCH_LINES) {
    const part = partOf(batch, start);
    const partKnown = known === undefined ? await itemsByFingerprint(deps.orm.em.fork(), job.catalog_id, part.fingerprints)
      : part === batch ? known : positionsIn(known, start, part.lines.length);
    if (partKnown.size === part.lines.length) {
      unchanged += part.lines.length;
      knownRun = { lines: knownRun.lines + part.lines.length, last: part.lines.at(-1) };
      continue;
    }
    if (knownRun.last) await recordKnown(deps, job, cursor, knownRun.lines, knownRun.last);
    knownRun = { lines: 0, last: undefined };
    unchanged += await commitLines(deps, job, cursor, part, partKnown, turn);
    known = undefined;
  }
  if (knownRun.last) await recordKnown(deps, job, cursor, knownRun.lines, knownRun.last);
  return unchanged;
}

/** The BATCH_LINES lines of `batch` from `start` (the batch itself when it has no more). */
function partOf(batch: PreparedBatch, start: number): PreparedBatch {
  if (start === 0 && batch.lines.length <= BATCH_LINES) return batch;
  const end = start + BATCH_LINES;
  const lines = batch.lines.slice(start, end);
  const fingerprints = batch.fingerprints.slice(start, end);
  return batch.ahead ? { lines, fingerprints, ahead: batch.ahead.slice(start, end) } : { lines, fingerprints };
}

/** The entries of `known` (by position in a batch) for the `length` lines from `start`, by position among them. */
function positionsIn(known: ReadonlyMap<number, string>, start: number, length: number): Map<number, string> {
  const part = new Map<number, string>();
  for (const [i, key] of known) if (i >= start && i < start + length) part.set(i - start, key);
  return part;
}

/** `lines` lines all proved stored, ending with `last`: their counters and cursor, one statement. */
async function recordKnown(deps: ProcessDeps, job: JobRow, cursor: { line: number }, lines: number, last: FileLine): Promise<void> {
  const counts: BatchCounts = { processed: lines, succeeded: 0, failed: 0, unchanged: lines, created: 0, updated: 0 };
  await recordBatch(deps.orm.em.fork(), job, cursor, last, counts, []);
  cursor.line = last.lineNumber;
}

/**
 * One transaction: the lines that are not all stored already, through the upsert path. Written
 * first in one statement (commitInOneStatement) when the items allow it, otherwise without
 * savepoints; should a write fail in the database (rare: a constraint, a concurrent writer), it
 * rolls back and the lines go through again in a transaction, each item's write isolated.
 * Returns how many lines proved unchanged.
 */
async function commitLines(
  deps: ProcessDeps, job: JobRow, cursor: { line: number }, part: PreparedBatch, known: ReadonlyMap<number, string>, turn: BatchTurn,
): Promise<number> {
  try {
    return await commitLinesOnce(deps, job, cursor, part, known, turn, true);
  } catch (error) {
    if (!(error instanceof UnguardedWriteFailed)) throw error;
    deps.logger.debug({ jobId: job.id, err: error.cause }, 'import batch rolled back after a database error; writing it item by item');
    return commitLinesOnce(deps, job, cursor, part, known, turn, false);
  }
}

async function commitLinesOnce(
  deps: ProcessDeps, job: JobRow, cursor: { line: number }, part: PreparedBatch, known: ReadonlyMap<number, string>,
  turn: BatchTurn, unguarded: boolean,
): Promise<number> {
  const lines = linesToUpsert(part, known);
  if (unguarded && !job.dry_run && writesInOneStatement(lines.items)) return commitInOneStatement(deps, job, cursor, part, lines, turn);
  const last = part.lines.at(-1)!;
  const counts = await deps.orm.em.fork().transactional(async (tx) => {
    const entries = lines.valueLines.length > 0
      ? await upsertPrepared(tx, job.catalog_id, lines.items, { dryRun: job.dry_run, unguarded, beforeWrite: turn.beforeWrite }) : [];
    turn.wrote();
    const outcome = outcomeOf(part, lines, entries);
    await turn.aheadCommitted;
    await recordBatch(tx, job, cursor, last, outcome.counts, outcome.batchErrors);
    return outcome.counts;
  });
  cursor.line = last.lineNumber;
  return counts.unchanged;
}

/** True when the items write in one round (no item twice) without media: in one statement. */
function writesInOneStatement(items: PreparedItems): boolean {
  const identities = new Set<string>();
  for (const { item } of items.valid) {
    const identity = identityKey(item.externalSystem, item.externalId);
    if (item.media.length > 0 || identities.has(identity)) return false;
    identities.add(identity);
  }
  return true;
}

/**
 * The batch as one statement, which is its transaction: the items' write carries the batch's
 * line errors, counters and cursor (RECORD_WITH_WRITE, a rider of the upsert path's write), so
 * the batch sends no BEGIN, COMMIT or counters statement of its own: three statements of six.
 * The rider's gate is RECORD_BATCH's condition: when the job was cancelled meanwhile or another
 * processor moved the cursor, the statement writes nothing. A batch that writes no item records
 * its counters alone, one statement too.
 */
async function commitInOneStatement(
  deps: ProcessDeps, job: JobRow, cursor: { line: number }, part: PreparedBatch, lines: LinesToUpsert, turn: BatchTurn,
): Promise<number> {
  const last = part.lines.at(-1)!;
  const em = deps.orm.em.fork();
  let ridden = false;
  const rider = (decided: readonly UpsertEntry[], writing: number): WriteRider => {
    ridden = true;
    const known = outcomeOf(part, lines, [...lines.items.entries.filter((entry) => entry !== undefined), ...decided]);
    return {
      sql: RECORD_WITH_WRITE,
      params: [job.id, cursor.line, errorsJson(known.batchErrors), known.counts.processed, known.counts.failed, known.counts.unchanged,
        writing, last.lineNumber, last.endOffset],
    };
  };
  let entries: UpsertEntry[] = [];
  try {
    if (lines.valueLines.length > 0) {
      entries = await upsertPrepared(em, job.catalog_id, lines.items, { unguarded: true, beforeWrite: turn.beforeCommittingWrite, rider });
    }
  } catch (error) {
    throw error instanceof RiderRefused ? new JobStopped() : error;
  }
  turn.wrote();
  const { counts, batchErrors } = outcomeOf(part, lines, entries);
  if (!ridden) {
    await turn.aheadCommitted;
    await recordBatch(em, job, cursor, last, counts, batchErrors);
  }
  cursor.line = last.lineNumber;
  return counts.unchanged;
}

type LinesToUpsert = ReturnType<typeof linesToUpsert>;

/** A batch's counters and line errors, given the entries of its lines that went through the upsert path (by position). */
function outcomeOf(part: PreparedBatch, { valueLines, lineErrors, unchanged }: LinesToUpsert, entries: readonly UpsertEntry[]) {
  const counts: BatchCounts = { processed: part.lines.length, succeeded: 0, failed: 0, unchanged, created: 0, updated: 0 };
  const batchErrors = [...lineErrors];
  for (const entry of entries) {
    if (entry.status === 'error') {
      const line = valueLines[entry.index]!;
      batchErrors.push({
        lineNumber: line.lineNumber, externalId: entry.externalId, errorType: errorTypeOf(entry.error),
        errorMessage: errorMessageOf(entry.error), rawLine: rawLineOf(line),
      });
    } else if (entry.status === 'unchanged') counts.unchanged += 1;
    else {
      counts.succeeded += 1;
      if (entry.status === 'created') counts.created += 1;
      else counts.updated += 1;
    }
  }
  counts.failed = batchErrors.length;
  return { counts, batchErrors };
}

// The one door of line errors to the database: whatever a line held, its error is storable.
const errorsJson = (errors: readonly LineError[]) =>
  JSON.stringify(errors.map((e) => ({
    l: e.lineNumber, x: e.externalId === null ? null : storableText(e.externalId), t: e.errorType,
    m: storableText(e.errorMessage), r: storableText(e.rawLine),
  })));

// RECORD_BATCH as a rider of the items' write ($7 on): the same gate, errors and counters, with
// `succeeded` and the unchanged the write finds (a concurrent writer stored the same content
// first) counted from the rows it wrote. $12 is the unchanged known before it, $13 the items it sends.
const RECORD_WITH_WRITE: WriteRiderSql = {
  gate: `gate AS (SELECT id FROM import_jobs WHERE id = $7 AND status = 'processing' AND resume_line = $8 FOR NO KEY UPDATE)`,
  ctes: `line_errors AS (
      INSERT INTO import_errors (job_id, line_number, external_id, error_type, error_message, raw_line)
      SELECT gate.id, e.l, e.x, e.t, e.m, e.r FROM gate, jsonb_to_recordset($9::jsonb) AS e(l int, x text, t text, m text, r text)
      ON CONFLICT (job_id, line_number) DO NOTHING
    ), recorded AS (
      UPDATE import_jobs j SET processed = processed + $10, succeeded = succeeded + w.n, failed = failed + $11,
        unchanged = unchanged + $12 + ($13 - w.n), error_count = error_count + $11,
        resume_line = $14, resume_offset = $15, updated_at = now()
      FROM gate, (SELECT count(*)::int AS n FROM written) AS w
      WHERE j.id = gate.id
      RETURNING set_config('synchronous_commit', 'off', true)
    )`,
  applied: 'recorded',
};

// Once per batch, so a named prepared statement: planning it cost about as much as running it.
const RECORD_BATCH = prepared(`WITH errors AS (
    INSERT INTO import_errors (job_id, line_number, external_id, error_type, error_message, raw_line)
    SELECT $1, e.l, e.x, e.t, e.m, e.r FROM jsonb_to_recordset($2::jsonb) AS e(l int, x text, t text, m text, r text)
    ON CONFLICT (job_id, line_number) DO NOTHING
  )
  UPDATE import_jobs SET processed = processed + $3, succeeded = succeeded + $4, failed = failed + $5, unchanged = unchanged + $6,
    error_count = error_count + $7, dry_run_created = dry_run_created + $8, dry_run_updated = dry_run_updated + $9,
    resume_line = $10, resume_offset = $11, updated_at = now()
  WHERE id = $1 AND status = 'processing' AND resume_line = $12
  RETURNING id, set_config('synchronous_commit', 'off', true)`);

/**
 * The batch's line errors, counters and resume cursor, in the batch's transaction. Throws
 * JobStopped, rolling the batch back with everything it wrote, when the job was cancelled
 * meanwhile or another processor moved the cursor (this one lost its lock).
 */
async function recordBatch(em: EntityManager, job: JobRow, cursor: { line: number }, last: FileLine, counts: BatchCounts, batchErrors: readonly LineError[]): Promise<void> {
  const [updated] = await query<{ id: string }>(em, RECORD_BATCH,
    [
      job.id, errorsJson(batchErrors),
      counts.processed, counts.succeeded, counts.failed, counts.unchanged, counts.failed,
      job.dry_run ? counts.created : 0, job.dry_run ? counts.updated : 0, last.lineNumber, last.endOffset, cursor.line,
    ],
  );
  // synchronous_commit off (set above, for this transaction only): the commit does not wait for
  // the WAL flush. A database crash can lose only the last batches, and loses each whole with
  // its cursor (one transaction), so the job simply redoes exactly those lines.
  if (!updated) throw new JobStopped();
}

/** processing → completed | completed_with_errors | failed (every line failed), with its event. */
async function complete(deps: ProcessDeps, jobId: string): Promise<ProcessOutcome> {
  const outcome = await deps.orm.em.fork().transactional(async (tx) => {
    const job = await loadJob(tx, jobId, true);
    if (job?.status !== 'processing') return 'stopped' as const;
    if (job.failed > 0 && job.failed === job.total) await finishJob(tx, job, 'failed', 'every line failed; see the line errors');
    else await finishJob(tx, job, job.failed > 0 ? 'completed_with_errors' : 'completed', null);
    return 'finished' as const;
  });
  deps.logger.info({ jobId, outcome }, 'import processed');
  return outcome;
}
