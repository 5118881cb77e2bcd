// A job whose processing keeps failing for a reason a retry cannot fix is parked: `failed`, with that reason.
import type { Db } from '../../platform/db/sql.ts';
import { countProcessingFailure, finishJob, loadJob } from './job-store.ts';

/**
 * Failures of one job (not counting lost connections, which only delay it) before it is parked.
 * Each failure comes back on the next sweep, so three is seconds of trying, not hours.
 */
export const MAX_PROCESSING_FAILURES = 3;

/**
 * Counts one failure of the job's processing; at the third, ends the job `failed` (with its
 * import.failed event) so that it stops taking a consumer's turn and its owner learns why.
 * Returns whether the job is parked now. Lines committed before the failure stay committed.
 */
export async function recordProcessingFailure(db: Db, jobId: string): Promise<boolean> {
  return db.transactional(async (tx) => {
    const job = await loadJob(tx, jobId, { lock: true });
    if (!job || (job.status !== 'queued' && job.status !== 'processing')) return false;
    if (await countProcessingFailure(tx, jobId) < MAX_PROCESSING_FAILURES) return false;
    const at = Number(job.resume_line) + 1;
    await finishJob(tx, job, 'failed',
      `processing failed ${MAX_PROCESSING_FAILURES} times in the batch from line ${at}, for a reason retrying did not fix ` +
      `(the service logged it); the lines before line ${at} are stored. Import the file from line ${at} on as a new job.`);
    return true;
  });
}
