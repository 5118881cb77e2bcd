// A batch's record: its line errors, every line's result, its counters and resume cursor, in the batch's own statement or transaction.
import { prepared, query, sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { storableText } from '../../platform/db/storable-text.ts';
import type { BatchRecord } from '../items/store.ts';
import type { BatchCounts } from './job-store.ts';
import type { BatchResults } from './line-results.ts';
import type { LineError } from './lines.ts';

/** Where a batch leaves the job: its last line, and the cursor it found (another processor may have moved it). */
export interface BatchPlace {
  readonly jobId: string;
  /** The resume line this run last recorded: the batch applies only while the job's is still this one. */
  readonly fromLine: number;
  /** Where the batch's lines start in the file: the byte offset the resume cursor recorded with fromLine. */
  readonly fromOffset: number;
  readonly lastLine: number;
  readonly endOffset: number;
}

// The one door of line errors to the database: whatever a line held, its error is storable.
const errorsJson = (errors: readonly LineError[]) =>
  JSON.stringify(errors.map((e) => ({
    l: e.lineNumber, x: e.externalId === null ? null : storableText(e.externalId), t: e.errorType,
    m: storableText(e.errorMessage), r: storableText(e.rawLine),
  })));

// The results as the CTE `result_input` takes them; rendered lines are JSON.stringify's, storable whatever a line held.
const resultInput = (results: BatchResults) =>
  [results.lines, results.codes, results.ids, results.rendered.length === 0 ? null : results.rendered.join('\n')] as const;

/**
 * The CTE `results`: the batch's results as one import_results row, once `gate` (a CTE naming the
 * job) applies: a code and an id a line, in line order, and the rendered lines (BatchResults,
 * from the CTE `result_input`: lines, codes, ids, rendered, and the batch's place first_line and
 * from_offset). An update's changedFields are those its write recorded on the item. In a write's
 * statement (`written`), the items it was sent (`input`, each with its line in its version
 * source) take their outcome from the rows written: one sent but not written was stored
 * meanwhile with the same content, unchanged, its id probed by its key.
 */
function resultsCte(written: boolean): string {
  return `results AS (
      INSERT INTO import_results (job_id, first_line, from_offset, outcomes, ids, changed, lines)
      SELECT g.id, p.first_line, p.from_offset, string_agg(r.code, '' ORDER BY r.line), array_agg(r.id ORDER BY r.line),
        jsonb_agg(r.changed ORDER BY r.line) FILTER (WHERE r.code = 'u'), p.rendered
      FROM gate g CROSS JOIN result_input p CROSS JOIN LATERAL (
        SELECT d.line, d.code, d.id, CASE WHEN d.code = 'u' THEN (SELECT to_jsonb(i.changed_fields) FROM items i WHERE i.id = d.id) END AS changed
        FROM unnest(p.lines, string_to_array(p.codes, NULL), p.ids) AS d(line, code, id)
        ${written ? `UNION ALL
        SELECT (x.source->>'lineNumber')::int, CASE WHEN w.id IS NULL THEN 'n' WHEN w.inserted THEN 'c' ELSE 'u' END,
          coalesce(w.id, (SELECT s.id FROM items s WHERE s.catalog_id = g.catalog_id AND s.external_system = x.external_system AND s.external_id = x.external_id)),
          to_jsonb(w.changed_fields)
        FROM input x LEFT JOIN written w ON w.external_system = x.external_system AND w.external_id = x.external_id` : ''}
      ) r
      GROUP BY g.id, p.first_line, p.from_offset, p.rendered
      ON CONFLICT (job_id, first_line) DO NOTHING
    )`;
}

// Once per batch, so a named prepared statement: its planning costs about as much as its run.
const RECORD_BATCH = prepared(`WITH errors AS (
    INSERT INTO import_errors (job_id, line_number, external_id, error_type, error_message, raw_line)
    SELECT $1, e.l, e.x, e.t, e.m, e.r FROM jsonb_to_recordset($2::jsonb) AS e(l int, x text, t text, m text, r text)
    ON CONFLICT (job_id, line_number) DO NOTHING
  ), gate AS (
    UPDATE import_jobs SET processed = processed + $3, succeeded = succeeded + $4, failed = failed + $5, unchanged = unchanged + $6,
      error_count = error_count + $7, dry_run_created = dry_run_created + $8, dry_run_updated = dry_run_updated + $9,
      resume_line = $10, resume_offset = $11, updated_at = now()
    WHERE id = $1 AND status = 'processing' AND resume_line = $12
    RETURNING id, catalog_id, set_config('synchronous_commit', 'off', true)
  ), result_input AS (SELECT $13::int[] AS lines, $14::text AS codes, $15::uuid[] AS ids, $16::text AS rendered, $12::int + 1 AS first_line, $17::bigint AS from_offset),
  ${resultsCte(false)}, known_run AS (
    INSERT INTO import_results (job_id, first_line, from_offset, outcomes, ids)
    SELECT g.id, p.first_line, p.from_offset, repeat('n', cardinality($18::uuid[])), $18::uuid[] FROM gate g, result_input p WHERE $18::uuid[] IS NOT NULL
    ON CONFLICT (job_id, first_line) DO NOTHING
  )
  SELECT id FROM gate`);

/**
 * A batch's line errors, results, counters and resume cursor, in the batch's transaction. False,
 * writing nothing, when the job was cancelled meanwhile or another processor moved the cursor:
 * the caller rolls the batch back. synchronous_commit is off for that transaction only: its
 * commit does not wait for the WAL flush, so a database crash can lose only the last batches,
 * each whole with its cursor, and the job simply redoes exactly those lines.
 */
export async function recordBatch(db: Db, place: BatchPlace, counts: BatchCounts, errors: readonly LineError[], results: BatchResults, dryRun: boolean): Promise<boolean> {
  return record(db, place, counts, errors, results, dryRun, null);
}

/**
 * recordBatch for a run of lines all proved stored by their fingerprint, from the batch's place
 * on, whose items have `ids` (in line order): their results are one row of those ids, the lines
 * read again from the job's file when the results are read (a re-import writes no more).
 */
export function recordKnownRun(db: Db, place: BatchPlace, counts: BatchCounts, ids: readonly string[], dryRun: boolean): Promise<boolean> {
  return record(db, place, counts, [], NO_RESULTS, dryRun, ids);
}

const NO_RESULTS: BatchResults = { lines: [], codes: '', ids: [], rendered: [] };

async function record(
  db: Db, place: BatchPlace, counts: BatchCounts, errors: readonly LineError[], results: BatchResults, dryRun: boolean, knownIds: readonly string[] | null,
): Promise<boolean> {
  const rows = await query(db, RECORD_BATCH, [
    place.jobId, errorsJson(errors), counts.processed, counts.succeeded, counts.failed, counts.unchanged, counts.failed,
    dryRun ? counts.created : 0, dryRun ? counts.updated : 0, place.lastLine, place.endOffset, place.fromLine,
    ...resultInput(results), place.fromOffset, knownIds,
  ]);
  return rows.length > 0;
}

const WRITTEN_RESULTS = sql.raw(resultsCte(true));

/**
 * recordBatch as the batch record of the items' write (domain/items/store-write.ts), committed in
 * its statement: the same gate (the job row, locked, while the cursor is where this run left it),
 * line errors, results and counters. `succeeded` counts the rows the write returns; the items it
 * sends but does not write (a concurrent writer stored the same content first) count as
 * unchanged. `counts` are those known before the write; `writing` is how many items the write
 * sends, which have no line in `results`.
 */
export function batchRecordForWrite(place: BatchPlace, counts: BatchCounts, errors: readonly LineError[], results: BatchResults, writing: number): BatchRecord {
  const failed = sql`${counts.failed}::int`;
  const [lines, codes, ids, rendered] = resultInput(results);
  return {
    gate: sql`SELECT id, catalog_id FROM import_jobs WHERE id = ${place.jobId}::uuid AND status = 'processing' AND resume_line = ${place.fromLine}::bigint
      FOR NO KEY UPDATE`,
    ctes: sql`line_errors AS (
      INSERT INTO import_errors (job_id, line_number, external_id, error_type, error_message, raw_line)
      SELECT gate.id, e.l, e.x, e.t, e.m, e.r FROM gate, jsonb_to_recordset(${errorsJson(errors)}::jsonb) AS e(l int, x text, t text, m text, r text)
      ON CONFLICT (job_id, line_number) DO NOTHING
    ), result_input AS (SELECT ${lines}::int[] AS lines, ${codes}::text AS codes, ${ids}::uuid[] AS ids, ${rendered}::text AS rendered,
      ${place.fromLine + 1}::int AS first_line, ${place.fromOffset}::bigint AS from_offset),
    ${WRITTEN_RESULTS}, recorded AS (
      UPDATE import_jobs j SET processed = processed + ${counts.processed}::int, succeeded = succeeded + w.n, failed = failed + ${failed},
        unchanged = unchanged + ${counts.unchanged}::int + (${writing}::int - w.n), error_count = error_count + ${failed},
        resume_line = ${place.lastLine}::bigint, resume_offset = ${place.endOffset}::bigint, updated_at = now()
      FROM gate, (SELECT count(*)::int AS n FROM written) AS w
      WHERE j.id = gate.id
      RETURNING set_config('synchronous_commit', 'off', true)
    )`,
    applied: sql`(SELECT count(*) FROM recorded)`,
  };
}
