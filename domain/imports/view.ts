// An import job row as the API shows it (the contract's ImportJob), and the SQL that selects it.
import type { ImportJob, ImportStatus } from '../../generated/client.ts';
import { isoTime } from '../items/view.ts';

export type { ImportStatus };

export const TERMINAL: ReadonlySet<ImportStatus> = new Set(['completed', 'completed_with_errors', 'failed', 'cancelled']);
/** What counts toward the 5 concurrent jobs of a catalog (an awaiting job only while its window is open). */
export const ACTIVE_SQL = `(status IN ('queued', 'processing') OR (status = 'awaiting_upload' AND upload_expires_at > now()))`;

export interface JobRow {
  id: string;
  catalog_id: string;
  status: ImportStatus;
  dry_run: boolean;
  file_size_bytes: string | number;
  storage_path: string;
  uploaded_at: string | null;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  unchanged: number;
  error_count: number;
  dry_run_created: number;
  dry_run_updated: number;
  resume_line: string | number;
  resume_offset: string | number;
  failure_reason: string | null;
  retry_of: string | null;
  upload_expires_at: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** Exact created_at (microseconds), for list cursors. */
  created_at_text: string;
}

export const JOB_SELECT = `
SELECT j.id, j.catalog_id, j.status, j.dry_run, j.file_size_bytes, j.storage_path, ${isoTime('j.uploaded_at')} AS uploaded_at,
  j.total, j.processed, j.succeeded, j.failed, j.unchanged, j.error_count, j.dry_run_created, j.dry_run_updated,
  j.resume_line, j.resume_offset, j.failure_reason, j.retry_of, ${isoTime('j.upload_expires_at')} AS upload_expires_at,
  ${isoTime('j.created_at')} AS created_at, ${isoTime('j.started_at')} AS started_at, ${isoTime('j.finished_at')} AS finished_at,
  j.created_at::text AS created_at_text
FROM import_jobs j`;

export function counts(row: JobRow) {
  return { total: row.total, processed: row.processed, succeeded: row.succeeded, failed: row.failed, unchanged: row.unchanged };
}

export function jobView(row: JobRow): ImportJob {
  const done = row.status === 'completed' || row.status === 'completed_with_errors';
  // processed / total × 100 (DESIGN §4), two decimals; a finished job with no lines is simply done.
  const progress = row.total > 0 ? Math.min(100, Math.floor((row.processed / row.total) * 10_000) / 100) : done ? 100 : 0;
  return {
    id: row.id,
    status: row.status,
    dryRun: row.dry_run,
    progress,
    counts: counts(row),
    errorCount: row.error_count,
    fileSizeBytes: Number(row.file_size_bytes),
    failureReason: row.failure_reason,
    retryOf: row.retry_of,
    uploadExpiresAt: row.upload_expires_at,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    dryRunSummary: row.dry_run && row.finished_at !== null
      ? { created: row.dry_run_created, updated: row.dry_run_updated, unchanged: row.unchanged, failed: row.failed }
      : null,
  };
}
