// Housekeeping of import jobs: lapsed upload windows, and jobs whose consumer died mid-file.
import type { Db } from '../../platform/db/sql.ts';
import { finishJob, lapsedUploadJobs, resumableJobIds } from './job-store.ts';

/** Cancels jobs whose upload window lapsed without a start (docs/imports.md, "Jobs and their rules"), each with its import.failed event. */
export async function expireUploadWindows(db: Db): Promise<number> {
  return db.transactional(async (tx) => {
    const jobs = await lapsedUploadJobs(tx);
    for (const job of jobs) await finishJob(tx, job, 'cancelled', 'upload window expired without a file');
    return jobs.length;
  });
}

/**
 * Up to `room` jobs a consumer should pick up without waiting for Kafka: processing jobs no
 * process runs (their worker died or stopped) and queued jobs whose message is overdue or was
 * left by a process without room.
 */
export function jobsToResume(db: Db, queuedGraceSeconds: number, room: number): Promise<string[]> {
  return resumableJobIds(db, queuedGraceSeconds, room);
}
