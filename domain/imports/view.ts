// An import job as the API shows it (the contract's ImportJob), from the job store's row.
import type { ImportJob, ImportStatus } from '../../generated/client.ts';
import { countsOf } from './job-store.ts';
import type { JobRow } from './job-store.ts';
import { API_PREFIX } from '../../platform/http/contract.ts';

export type { ImportStatus };

export const TERMINAL: ReadonlySet<ImportStatus> = new Set(['completed', 'completed_with_errors', 'failed', 'cancelled']);

/**
 * Lines per second since the job began processing, from its first batch on (a finished job: over
 * its whole run), and the seconds left at that rate while it processes.
 */
function pace(row: JobRow, now: number): { linesPerSecond: number | null; etaSeconds: number | null } {
  if (row.started_at === null || row.processed === 0) return { linesPerSecond: null, etaSeconds: null };
  const seconds = ((row.finished_at === null ? now : Date.parse(row.finished_at)) - Date.parse(row.started_at)) / 1000;
  if (seconds <= 0) return { linesPerSecond: null, etaSeconds: null };
  const rate = row.processed / seconds;
  const linesPerSecond = Math.round(rate * 100) / 100;
  return { linesPerSecond, etaSeconds: row.status === 'processing' ? Math.ceil(Math.max(row.total - row.processed, 0) / rate) : null };
}

export const resultsPath = (jobId: string) => `${API_PREFIX}/imports/${jobId}/results`;
export const failedLinesPath = (jobId: string) => `${API_PREFIX}/imports/${jobId}/failed-lines`;

/** An address as a job shows it: no query (a presigned address's signature is a credential). */
export const shownUrl = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
};

export function jobView(row: JobRow): ImportJob {
  const ended = TERMINAL.has(row.status);
  const done = row.status === 'completed' || row.status === 'completed_with_errors';
  // processed / total × 100 (docs/imports.md, "Jobs and their rules"), two decimals; a finished job with no lines is simply done.
  const progress = row.total > 0 ? Math.min(100, Math.floor((row.processed / row.total) * 10_000) / 100) : done ? 100 : 0;
  return {
    id: row.id,
    status: row.status,
    dryRun: row.dry_run,
    progress,
    counts: countsOf(row),
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
    ...pace(row, Date.now()),
    resultsUrl: ended ? resultsPath(row.id) : null,
    failedLinesUrl: ended && row.error_count > 0 ? failedLinesPath(row.id) : null,
    source: row.source_url === null ? null : {
      url: shownUrl(row.source_url), ifChanged: row.source_if_changed, unchanged: row.source_unchanged,
      etag: row.source_etag, lastModified: row.source_last_modified,
    },
  };
}
