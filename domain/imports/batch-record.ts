// A batch's record: its line errors, every line's result, its counters and resume cursor, in the batch's own statement or transaction.
import { prepared, query, sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { storableText } from '../../platform/db/storable-text.ts';
import type { BatchRecord } from '../items/store.ts';
import type { BatchCounts } from './job-store.ts';
import type { LineResult } from './line-results.ts';
import type { LineError } from './lines.ts';

/** Where a batch leaves the job: its last line, and the cursor it found (another processor may have moved it). */
export interface BatchPlace {
  readonly jobId: string;
  /** The resume line this run last recorded: the batch applies only while the job's is still this one. */
  readonly fromLine: number;
  readonly lastLine: number;
  readonly endOffset: number;
}

// The one door of line errors to the database: whatever a line held, its error is storable.
const errorsJson = (errors: readonly LineError[]) =>
  JSON.stringify(errors.map((e) => ({
    l: e.lineNumber, x: e.externalId === null ? null : storableText(e.externalId), t: e.errorType,
    m: storableText(e.errorMessage), r: storableText(e.rawLine),
  })));

// The same door for the lines filled in by the database: identities come from the file.
const resultsJson = (results: readonly LineResult[]) =>
  JSON.stringify(results.map((r) => ('r' in r ? r : { ...r, s: storableText(r.s), e: storableText(r.e) })));

/**
 * The CTE `results`: the batch's line results (the CTE `result_input`: `j` the JSON of
 * LineResult) as one import_results row, in line order, once `gate` (a CTE naming the job)
 * applies. A line rendered already goes in as it is; an update takes the changedFields the write
 * recorded on its item; in a write's statement (`written`), a line the write decides (`pending`)
 * takes its outcome from the rows written: one sent but not written was stored meanwhile with
 * the same content, unchanged. Rendered as JSON.stringify would (to_json escapes these strings
 * alike). The item is probed by its key (LATERAL … LIMIT 1 is never a hash join over the catalog).
 */
function resultsCte(written: boolean): string {
  const status = written ? `CASE WHEN x.st = 'updated' THEN 'updated' WHEN w.id IS NULL THEN 'unchanged' WHEN w.inserted THEN 'created' ELSE 'updated' END` : 'x.st';
  const id = written ? `coalesce(x.id, w.id, (SELECT s.id FROM items s WHERE s.catalog_id = g.catalog_id AND s.external_system = x.s AND s.external_id = x.e))` : 'x.id';
  const changed = written ? 'coalesce(w.changed_fields, i.changed_fields)' : 'i.changed_fields';
  return `results AS (
      INSERT INTO import_results (job_id, first_line, lines)
      SELECT g.id, min(r.l), string_agg(r.line, E'\n' ORDER BY r.l)
      FROM gate g, LATERAL (
        SELECT x.l, coalesce(x.r, concat('{"lineNumber":', x.l, ',"status":"', f.st, '","externalSystem":', to_json(x.s),
          ',"externalId":', to_json(x.e), CASE WHEN f.id IS NOT NULL THEN concat(',"serviceId":"', f.id, '"') END, ',"contentHash":"', x.h, '"',
          CASE WHEN f.st = 'updated' AND f.changed IS NOT NULL THEN concat(',"changedFields":', to_json(f.changed)) END, '}')) AS line
        FROM jsonb_to_recordset((SELECT j FROM result_input)) AS x(l int, r text, st text, s text, e text, h text, id uuid)
        LEFT JOIN LATERAL (SELECT i.changed_fields FROM items i WHERE x.st = 'updated' AND i.id = x.id LIMIT 1) i ON true
        ${written ? `LEFT JOIN written w ON x.st = 'pending' AND w.external_system = x.s AND w.external_id = x.e` : ''}
        CROSS JOIN LATERAL (SELECT ${status} AS st, ${id} AS id, ${changed} AS changed) f
      ) r
      GROUP BY g.id
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
  ), result_input AS (SELECT $13::jsonb AS j),
  ${resultsCte(false)}, known_run AS (
    INSERT INTO import_results (job_id, first_line, from_offset, known_ids)
    SELECT g.id, $14, $15, $16::uuid[] FROM gate g WHERE $16::uuid[] IS NOT NULL
    ON CONFLICT (job_id, first_line) DO NOTHING
  )
  SELECT id FROM gate`);

/** A run of lines proved stored by their fingerprint, from `firstLine` at byte `offset`, whose items have `ids`. */
export interface KnownRun {
  readonly firstLine: number;
  readonly offset: number;
  readonly ids: readonly string[];
}

/**
 * A batch's line errors, results, counters and resume cursor, in the batch's transaction. False,
 * writing nothing, when the job was cancelled meanwhile or another processor moved the cursor:
 * the caller rolls the batch back. synchronous_commit is off for that transaction only: its
 * commit does not wait for the WAL flush, so a database crash can lose only the last batches,
 * each whole with its cursor, and the job simply redoes exactly those lines.
 */
export async function recordBatch(
  db: Db, place: BatchPlace, counts: BatchCounts, errors: readonly LineError[], results: readonly LineResult[], dryRun: boolean, known?: KnownRun,
): Promise<boolean> {
  const rows = await query(db, RECORD_BATCH, [
    place.jobId, errorsJson(errors), counts.processed, counts.succeeded, counts.failed, counts.unchanged, counts.failed,
    dryRun ? counts.created : 0, dryRun ? counts.updated : 0, place.lastLine, place.endOffset, place.fromLine,
    resultsJson(results), known?.firstLine ?? null, known?.offset ?? null, known ? known.ids : null,
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
 * sends, whose `results` are `pending`.
 */
export function batchRecordForWrite(place: BatchPlace, counts: BatchCounts, errors: readonly LineError[], results: readonly LineResult[], writing: number): BatchRecord {
  const failed = sql`${counts.failed}::int`;
  return {
    gate: sql`SELECT id, catalog_id FROM import_jobs WHERE id = ${place.jobId}::uuid AND status = 'processing' AND resume_line = ${place.fromLine}::bigint
      FOR NO KEY UPDATE`,
    ctes: sql`line_errors AS (
      INSERT INTO import_errors (job_id, line_number, external_id, error_type, error_message, raw_line)
      SELECT gate.id, e.l, e.x, e.t, e.m, e.r FROM gate, jsonb_to_recordset(${errorsJson(errors)}::jsonb) AS e(l int, x text, t text, m text, r text)
      ON CONFLICT (job_id, line_number) DO NOTHING
    ), result_input AS (SELECT ${resultsJson(results)}::jsonb AS j),
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
