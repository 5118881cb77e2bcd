// Housekeeping of import jobs: lapsed upload windows, and jobs whose consumer died mid-file.
import type { EntityManager } from '@mikro-orm/postgresql';
import { finishJob } from './jobs.ts';
import { JOB_SELECT } from './view.ts';
import type { JobRow } from './view.ts';

/** Cancels jobs whose upload window lapsed without a start (DESIGN §4), each with its import.failed event. */
export async function expireUploadWindows(em: EntityManager): Promise<number> {
  return em.transactional(async (tx) => {
    // SKIP LOCKED: several consumer processes sweep at once without waiting on, or doubling, each other.
    const jobs = await tx.execute<JobRow[]>(
      `${JOB_SELECT} WHERE j.status = 'awaiting_upload' AND j.upload_expires_at <= now() ORDER BY j.upload_expires_at LIMIT 100 FOR UPDATE SKIP LOCKED`,
    );
    for (const job of jobs) await finishJob(tx, job, 'cancelled', 'upload window expired without a file');
    return jobs.length;
  });
}

/**
 * Jobs a consumer should pick up without waiting for Kafka: every processing job (its worker may
 * have died; the processing lock tells) and queued jobs whose message is overdue.
 */
export async function jobsToResume(em: EntityManager, queuedGraceSeconds: number): Promise<string[]> {
  const rows = await em.execute<Array<{ id: string }>>(
    `SELECT id FROM import_jobs WHERE status = 'processing' OR (status = 'queued' AND queued_at < now() - make_interval(secs => ?))
     ORDER BY created_at LIMIT 50`,
    [queuedGraceSeconds],
  );
  return rows.map((r) => r.id);
}
