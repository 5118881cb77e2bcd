// A batch's record: its line errors, every line's result, its counters and resume cursor, in the batch's own statement or transaction.
import { prepared, query, sql } from '../../platform/db/sql.ts';
import type { Db } from '../../platform/db/sql.ts';
import { storableText } from '../../platform/db/storable-text.ts';
import type { WriteRider } from '../items/store.ts';
import type { BatchCounts } from './job-store.ts';
import type { LineResult } from './line-results.ts';
import type { LineError } from './lines.ts';

/** Where a batch leaves the job: its last line, and the cursor it found (another processor may have moved it). */
export interface BatchPlace {
  readonly jobId: string;
  readonly catalogId: string;
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

// The same door for the results: identities and messages come from the file.
const resultsJson = (results: readonly LineResult[]) =>
  JSON.stringify(results.map((r) => ({
    ...r, e: r.e === null ? null : storableText(r.e), ...(r.s === undefined ? {} : { s: storableText(r.s) }),
    ...(r.m === undefined ? {} : { m: storableText(r.m) }),
  })));

/**
 * The CTE `results`: the batch's line results (the CTE `result_input`: `j` the JSON of
 * LineResult, `c` the catalog) as one import_results row, in line order, once `gate` (a CTE
 * naming the job) applies. What the batch knows is filled in from the items: a line proved
 * stored by its fingerprint takes the stored item's id and hash, an update its changedFields (the
 * write recorded them on the row). In a write's statement (`written`), a line the write decides
 * (`pending`) takes its outcome from the rows written: one sent but not written was stored
 * meanwhile with the same content, unchanged.
 */
function resultsCte(written: boolean): string {
  const pending = (then: string, otherwise: string) => (written ? `CASE WHEN x.st = 'pending' THEN ${then} ELSE ${otherwise} END` : otherwise);
  const status = pending(`CASE WHEN w.id IS NULL THEN 'unchanged' WHEN w.inserted THEN 'created' ELSE 'updated' END`, 'x.st');
  const changed = pending(`CASE WHEN NOT w.inserted THEN to_jsonb(w.changed_fields) END`,
    `coalesce(x.c, CASE WHEN x.st = 'updated' THEN to_jsonb(i.changed_fields) END)`);
  const id = written ? `coalesce(x.id, i.id, w.id, CASE WHEN x.st = 'pending' THEN (SELECT s.id FROM items s
      WHERE s.catalog_id = (SELECT c FROM result_input) AND s.external_system = x.s AND s.external_id = x.e) END)` : 'coalesce(x.id, i.id)';
  // json_strip_nulls would also strip a stored or incoming null out of `changes`: it is added after.
  const line = `concat(left(json_strip_nulls(json_build_object('lineNumber', r.l, 'status', r.st, 'externalSystem', r.s,
      'externalId', r.e, 'serviceId', r.id, 'contentHash', r.h, 'changedFields', r.c, 'errorType', r.t, 'errorMessage', r.m))::text, -1),
      CASE WHEN r.ch IS NOT NULL THEN concat(',"changes":', r.ch::text) END, '}')`;
  return `results AS (
      INSERT INTO import_results (job_id, first_line, lines)
      SELECT g.id, min(r.l), string_agg(${line}, E'\\n' ORDER BY r.l)
      FROM gate g, (
        SELECT x.l, ${status} AS st, x.s, x.e, ${id} AS id, coalesce(x.h, i.content_hash) AS h, ${changed} AS c, x.ch, x.t, x.m
        FROM jsonb_to_recordset((SELECT j FROM result_input))
          AS x(l int, st text, s text, e text, id uuid, h text, f boolean, c jsonb, ch jsonb, t text, m text)
        LEFT JOIN LATERAL (SELECT i.id, i.content_hash, i.changed_fields FROM items i
          WHERE x.f AND i.catalog_id = (SELECT c FROM result_input) AND i.external_system = x.s AND i.external_id = x.e) i ON true
        ${written ? `LEFT JOIN written w ON x.st = 'pending' AND w.external_system = x.s AND w.external_id = x.e` : ''}
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
    RETURNING id, set_config('synchronous_commit', 'off', true)
  ), result_input AS (SELECT $13::jsonb AS j, $14::uuid AS c),
  ${resultsCte(false)}
  SELECT id FROM gate`);

/**
 * A batch's line errors, results, counters and resume cursor, in the batch's transaction. False,
 * writing nothing, when the job was cancelled meanwhile or another processor moved the cursor:
 * the caller rolls the batch back. synchronous_commit is off for that transaction only: its
 * commit does not wait for the WAL flush, so a database crash can lose only the last batches,
 * each whole with its cursor, and the job simply redoes exactly those lines.
 */
export async function recordBatch(db: Db, place: BatchPlace, counts: BatchCounts, errors: readonly LineError[], results: readonly LineResult[], dryRun: boolean): Promise<boolean> {
  const rows = await query(db, RECORD_BATCH, [
    place.jobId, errorsJson(errors), counts.processed, counts.succeeded, counts.failed, counts.unchanged, counts.failed,
    dryRun ? counts.created : 0, dryRun ? counts.updated : 0, place.lastLine, place.endOffset, place.fromLine,
    resultsJson(results), place.catalogId,
  ]);
  return rows.length > 0;
}

const WRITTEN_RESULTS = sql.raw(resultsCte(true));

/**
 * recordBatch as a rider of the items' write (domain/items/store-write.ts), committed in its
 * statement: the same gate (the job row, locked, while the cursor is where this run left it),
 * line errors, results and counters. `succeeded` counts the rows the write returns; the items it
 * sends but does not write (a concurrent writer stored the same content first) count as
 * unchanged. `counts` are those known before the write; `writing` is how many items the write
 * sends, whose `results` are `pending`.
 */
export function batchRecordRider(place: BatchPlace, counts: BatchCounts, errors: readonly LineError[], results: readonly LineResult[], writing: number): WriteRider {
  const failed = sql`${counts.failed}::int`;
  return {
    gate: sql`SELECT id FROM import_jobs WHERE id = ${place.jobId}::uuid AND status = 'processing' AND resume_line = ${place.fromLine}::bigint
      FOR NO KEY UPDATE`,
    ctes: sql`line_errors AS (
      INSERT INTO import_errors (job_id, line_number, external_id, error_type, error_message, raw_line)
      SELECT gate.id, e.l, e.x, e.t, e.m, e.r FROM gate, jsonb_to_recordset(${errorsJson(errors)}::jsonb) AS e(l int, x text, t text, m text, r text)
      ON CONFLICT (job_id, line_number) DO NOTHING
    ), result_input AS (SELECT ${resultsJson(results)}::jsonb AS j, ${place.catalogId}::uuid AS c),
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
