// A job's progress: lines done of all, and while it runs, its rate and the time left.
import type { ImportJob } from '../../generated/client.ts';

const TERMINAL = new Set(['completed', 'completed_with_errors', 'failed', 'cancelled']);
export const isRunning = (job: ImportJob): boolean => !TERMINAL.has(job.status);

export function ImportProgress({ job }: { job: ImportJob }) {
  const { processed, total } = job.counts;
  return (
    <span class="progress">
      <progress max={Math.max(total, 1)} value={processed} aria-label={`Job ${job.id.slice(-8)} progress`} />{' '}
      {processed.toLocaleString()} of {total.toLocaleString()} lines
      {job.linesPerSecond !== null && <> · {Math.round(job.linesPerSecond).toLocaleString()} lines/s</>}
      {job.etaSeconds !== null && <> · about {job.etaSeconds} s left</>}
    </span>
  );
}
