// A job whose processing keeps failing for a reason a retry cannot fix is parked: `failed`, with that reason.
import type { EntityManager } from '@mikro-orm/postgresql';
import { finishJob } from './jobs.ts';
import { JOB_SELECT } from './view.ts';
import type { JobRow } from './view.ts';

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
export async function recordProcessingFailure(em: EntityManager, jobId: string): Promise<boolean> {
  return em.transactional(async (tx) => {
    const [job] = await tx.execute<JobRow[]>(`${JOB_SELECT} WHERE j.id = ? FOR UPDATE`, [jobId]);
    if (!job || (job.status !== 'queued' && job.status !== 'processing')) return false;
    const [row] = await tx.execute<Array<{ processing_failures: number }>>(
      'UPDATE import_jobs SET processing_failures = processing_failures + 1, updated_at = now() WHERE id = ? RETURNING processing_failures',
      [jobId],
    );
    if ((row?.processing_failures ?? 0) < MAX_PROCESSING_FAILURES) return false;
    const at = Number(job.resume_line) + 1;
    await finishJob(tx, job, 'failed',
      `processing failed ${MAX_PROCESSING_FAILURES} times in the batch from line ${at}, for a reason retrying did not fix ` +
      `(the service logged it); the lines before line ${at} are stored. Import the file from line ${at} on as a new job.`);
    return true;
  });
}
