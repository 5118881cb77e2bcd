// The media consumer's jobs in memory: taken from Kafka under a lease in Postgres, run through the host gate (each asset's in order), queued again when a lease lapses.
import { inSpan } from '../../platform/tracing.ts';
import { leaseOrHoldAssets, releaseAssets, renewLeases, takeJobsToQueue } from '../../domain/media/asset-store.ts';
import { assetKey, loadAssets } from '../../domain/media/assets.ts';
import { ingestMedia } from '../../domain/media/ingest.ts';
import type { IngestDeps, IngestOutcome } from '../../domain/media/ingest.ts';
import type { MediaJob } from '../../domain/media/register.ts';
import { messageRow, writeOutbox } from '../../domain/events/outbox.ts';
import { isConnectionError } from '../../platform/db/connections.ts';
import type { Db } from '../../platform/db/sql.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import type { Logger } from '../../platform/log/logger.ts';

/** A held job's lease; renewed every LEASE_RENEW_MS while it waits or runs. */
export const LEASE_SECONDS = 30;
/** How often leases are renewed and lapsed ones queued again. */
export const LEASE_RENEW_MS = 10_000;
// Jobs held in memory per process (waiting for their host, or running); taking more waits. A job
// is a few hundred bytes: the bound is on how far one slow host's backlog can fill the queue.
const MAX_HELD_JOBS = 1000;
const SWEEP_LIMIT = 500;

/** Thrown into a job that gets its slot after stop(): it gives the job up instead of starting it. */
class Stopped extends Error {}

export interface JobQueue {
  /**
   * Leases the jobs' assets, then queues the jobs and returns once there is room for more: the
   * caller commits their Kafka offsets then. A job waiting for a slow host holds up no other. A
   * job whose catalog runs an import is held for it in Postgres instead, and left.
   */
  take(jobs: readonly MediaJob[]): Promise<void>;
  /**
   * Renews the held leases, and queues again the jobs of lapsed ones and those held for an import
   * that has ended (run every LEASE_RENEW_MS, and when an import of this process ends).
   */
  sweep(): Promise<void>;
  /** Gives up the jobs not started (their leases lapse now), waits for the running ones. */
  stop(): Promise<void>;
}

export function createJobQueue(options: {
  db: Db; deps: IngestDeps; counts: Record<IngestOutcome, number>; log: Logger; onOutcome?: (outcome: IngestOutcome) => void;
}): JobQueue {
  const { db, counts, log } = options;
  let stopping = false;
  // Through the gate, a job that gets its slot after stop() starts no download.
  const deps: IngestDeps = {
    ...options.deps,
    throttle: (host, work) => options.deps.throttle(host, (doneWithHost) => (stopping ? Promise.reject(new Stopped()) : work(doneWithHost))),
  };
  const tails = new Map<string, Promise<void>>();
  const held = new Map<string, number>();
  let pending = 0;
  // A lost database fails every job in flight at once, and each heals by its lease: one warning
  // for the episode, and its count with the recovery, instead of an error line per job.
  let lostToDatabase = 0;
  const roomWaiters: Array<() => void> = [];
  const drained: Array<() => void> = [];

  const hold = (id: string) => held.set(id, (held.get(id) ?? 0) + 1);
  const unhold = (id: string) => {
    const left = (held.get(id) ?? 1) - 1;
    if (left > 0) held.set(id, left);
    else held.delete(id);
  };

  /** Queues a job behind the asset's earlier ones; `assets`: the batch's assets as loaded by take(). */
  function enqueue(job: MediaJob, assets: Awaited<ReturnType<typeof loadAssets>>): void {
    const key = assetKey(job);
    const loaded = assets.get(key);
    const before = tails.get(key);
    pending += 1;
    if (loaded) hold(loaded.id);
    const run: Promise<void> = (async () => {
      if (before) await before;
      if (stopping) return;
      // Behind another job of the asset, it reads the asset as that one left it.
      const current = before ? (await loadAssets(db, [job])).get(key) : loaded;
      const outcome = await inSpan('media job', { parent: job.traceparent ?? null, attributes: { 'catalog.media.source_url_hash': job.sourceUrlHash } }, () => ingestMedia(deps, job, current));
      counts[outcome] += 1;
      options.onOutcome?.(outcome);
      if (lostToDatabase > 0) {
        log.info({ failedJobs: lostToDatabase }, 'media jobs run again after the database came back; the failed ones are queued again by their leases');
        lostToDatabase = 0;
      }
    })().catch((error: unknown) => {
      if (error instanceof Stopped) return;
      if (isConnectionError(error)) {
        lostToDatabase += 1;
        if (lostToDatabase === 1) {
          log.warn({ err: error, sourceUrlHash: job.sourceUrlHash }, `media jobs fail: the database connection was lost; each is queued again when its lease lapses (${LEASE_SECONDS} s)`);
        }
        return;
      }
      log.error({ err: error, sourceUrlHash: job.sourceUrlHash }, `media job failed; it is queued again when its lease lapses (${LEASE_SECONDS} s)`);
    }).finally(() => {
      pending -= 1;
      if (loaded) unhold(loaded.id);
      if (tails.get(key) === run) tails.delete(key);
      roomWaiters.shift()?.();
      if (pending === 0) drained.splice(0).forEach((done) => done());
    });
    tails.set(key, run);
  }

  return {
    async take(jobs) {
      const firsts = [...new Map(jobs.map((job) => [assetKey(job), job])).values()];
      const assets = await loadAssets(db, firsts);
      // Images wait for their catalog's import (docs/design.md, "Images wait for their catalog's
      // import"); a job behind one of its asset's running here, or with nothing to do, goes on.
      const holdable = new Set([...assets].filter(([key, asset]) => !tails.has(key) && !asset.doneForJob).map(([, asset]) => asset.id));
      const heldForImport = await leaseOrHoldAssets(db, [...assets.values()].map((a) => a.id), holdable, LEASE_SECONDS);
      for (const job of jobs) {
        if (!heldForImport.has(assets.get(assetKey(job))?.id ?? '')) enqueue(job, assets);
      }
      if (heldForImport.size > 0) log.debug({ held: heldForImport.size }, 'media jobs held until their catalog\'s import ends');
      while (pending >= MAX_HELD_JOBS && !stopping) await new Promise<void>((resolve) => roomWaiters.push(resolve));
    },
    async sweep() {
      try {
        await renewLeases(db, [...held.keys()], LEASE_SECONDS);
        for (;;) {
          const taken = await db.transactional(async (tx) => {
            const due = await takeJobsToQueue(tx, SWEEP_LIMIT);
            await writeOutbox(tx, due.map((a) => messageRow({
              topic: TOPICS.media, key: a.source_url_hash,
              body: { catalogId: a.catalog_id, sourceUrlHash: a.source_url_hash, url: a.source_url, refresh: a.status === 'ingested', queuedAt: a.queued_at, externalIds: [] } satisfies MediaJob,
            })));
            return due;
          });
          const lapsed = taken.filter((a) => !a.held).length;
          if (lapsed > 0) log.warn({ lapsed }, 'queued media jobs again whose consumer let their lease lapse');
          if (taken.length > lapsed) log.info({ released: taken.length - lapsed }, 'queued media jobs held for their catalog\'s import, which has ended');
          if (taken.length < SWEEP_LIMIT) break;
        }
      } catch (error) {
        // The next sweep runs in LEASE_RENEW_MS: a lost connection heals by itself, anything else needs a look.
        if (isConnectionError(error)) log.warn({ err: error }, 'media lease sweep lost its database connection; it runs again');
        else log.error({ err: error }, 'media lease sweep failed; it runs again');
      }
    },
    async stop() {
      stopping = true;
      roomWaiters.splice(0).forEach((resume) => resume());
      await releaseAssets(db, [...held.keys()]).catch((error: unknown) => log.warn({ err: error }, 'could not release media leases; they lapse by themselves'));
      if (pending > 0) await new Promise<void>((resolve) => drained.push(resolve));
    },
  };
}
