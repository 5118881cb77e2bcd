// The outbox relay: publishes the committed outbox rows of the lanes it holds to Kafka, each lane in id order, and marks them sent only after Kafka acked.
import { OUTBOX_CHANNEL, claimOutbox, deleteSentOutbox, markOutboxSent } from '../../domain/events/outbox.ts';
import type { OutboxRecord } from '../../domain/events/outbox.ts';
import { parkRecords } from '../../domain/events/parked.ts';
import { purgeAuditLog } from '../../domain/audit/audit-log.ts';
import { purgeVersions } from '../../domain/items/versions.ts';
import { listenToChannel } from '../../platform/db/connections.ts';
import type { ChannelListener } from '../../platform/db/connections.ts';
import type { Orm } from '../../platform/db/orm.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import type { Logger } from '../../platform/log/logger.ts';
import { inSpan } from '../../platform/tracing.ts';
import { createLaneHolder } from './lanes.ts';
import type { LaneHolder } from './lanes.ts';
import { sendRecords } from './messages.ts';
import { publishInChunks } from './records.ts';

export interface OutboxRelayOptions {
  /** Its statements run on the ORM's pool. */
  readonly orm: Orm;
  /** For its LISTEN, which holds a connection of its own. */
  readonly databaseUrl: string;
  readonly kafka: KafkaClient;
  readonly logger: Logger;
  /** Records a claim takes at most from each lane, in whole outbox rows (one row at least, whatever its size). */
  readonly batchSize?: number;
  /**
   * While writers are busy, how long to wait before the next claim, so that it publishes what
   * several commits wrote in one Kafka request and one claim. "Busy": the last claim found at
   * least `lingerAfterRows` records but did not fill a batch (an import commits 100 items and their
   * events every few milliseconds). After a smaller claim the relay waits for the next NOTIFY
   * instead, so an event written alone is published at once.
   */
  readonly lingerMs?: number;
  readonly lingerAfterRows?: number;
  /** Fallback poll when no NOTIFY arrives (a lost LISTEN connection, a writer with notify off). */
  readonly pollIntervalMs?: number;
  readonly maxBackoffMs?: number;
  /** Sent events older than this are deleted (GET /events reads them until then). */
  readonly eventRetentionMs?: number;
  /** Sent work messages (import and media jobs) older than this are deleted. */
  readonly retentionMs?: number;
  /** Item versions older than this are deleted, with the sent outbox rows (ITEM_VERSION_RETENTION_DAYS). */
  readonly itemVersionRetentionMs?: number;
  /** Audit log entries older than this are deleted with them (AUDIT_LOG_RETENTION_DAYS). */
  readonly auditLogRetentionMs?: number;
  readonly cleanupIntervalMs?: number;
}

export interface OutboxRelayStats {
  published: number;
  batches: number;
  /** Records the broker refused for good, set aside (domain/events/parked.ts). */
  parked: number;
  failures: number;
  /** Records sent again because Kafka's answer to a send did not acknowledge them (consumers/relay/messages.ts). */
  resent: number;
  lastError: string | undefined;
}

export interface OutboxRelay {
  start(): Promise<void>;
  /** Finishes the in-flight batch (committed or rolled back), then closes its connections. */
  stop(): Promise<void>;
  /** Publishes one claim now, of the lanes no running relay holds; returns how many records it sent. For tests and benchmarks. */
  relayOnce(): Promise<number>;
  readonly stats: Readonly<OutboxRelayStats>;
}

// How often a relay looks whether it holds its share of the lanes: relays that join or leave are balanced within seconds.
const LANE_CHECK_MS = 2000;

// One warning a leader election, not one per lane: the lanes' sends meet it side by side.
const RESEND_WARNING_MS = 10_000;
// Small deletes keep each transaction short next to the writers: a row holds up to 1,000 records.
const ROWS_PER_DELETE = 200;

export function createOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const log = options.logger.child({ component: 'outbox-relay' });
  const batchSize = options.batchSize ?? 500;
  const lingerMs = options.lingerMs ?? 40;
  const lingerAfterRows = options.lingerAfterRows ?? 50;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const maxBackoffMs = options.maxBackoffMs ?? 30_000;
  const retentionMs = options.retentionMs ?? 24 * 3600_000;
  const eventRetentionMs = options.eventRetentionMs ?? 30 * 24 * 3600_000;
  const cleanupIntervalMs = options.cleanupIntervalMs ?? 10 * 60_000;
  const db = options.orm.em.fork();
  const stats: OutboxRelayStats = { published: 0, batches: 0, parked: 0, failures: 0, resent: 0, lastError: undefined };

  let running = false;
  let loop: Promise<void> | undefined;
  let listener: ChannelListener | undefined;
  let lanes: LaneHolder | undefined;
  // A NOTIFY that lands while a batch runs must not be lost: it makes the next idle nap return at once.
  let woken = false;
  let waiter: { finish: () => void; byNotify: boolean } | undefined;
  let topicsReady = false;
  let lastCleanup = 0;

  const notified = (): void => {
    woken = true;
    if (waiter?.byNotify) waiter.finish();
  };

  /** Sleeps until the timeout or stop(); with byNotify also until the next NOTIFY. */
  const nap = (ms: number, byNotify: boolean): Promise<void> => {
    if (!running) return Promise.resolve();
    if (byNotify && woken) {
      woken = false;
      return Promise.resolve();
    }
    return new Promise((done) => {
      const timer = setTimeout(finish, ms);
      function finish() {
        clearTimeout(timer);
        waiter = undefined;
        if (byNotify) woken = false;
        done();
      }
      waiter = { finish, byNotify };
    });
  };

  /**
   * Once LISTEN is back after the connection was lost, rows committed meanwhile were not
   * notified: claim at once, also cutting short a backoff, which was most likely waiting out
   * the same outage.
   */
  const listening = (): void => {
    woken = true;
    waiter?.finish();
  };

  const destination = { topicOf: options.kafka.topic, partitionCounts: options.kafka.partitionCounts };
  let lastResendWarning = 0;
  const unacknowledged = (count: number, of: number): void => {
    stats.resent += count;
    if (Date.now() - lastResendWarning < RESEND_WARNING_MS) return;
    lastResendWarning = Date.now();
    log.warn({ unacknowledged: count, of, resentSoFar: stats.resent },
      'Kafka answered a send without acknowledging some records (a partition leader moved); sending those again');
  };

  async function send(records: readonly OutboxRecord[]): Promise<void> {
    await sendRecords(records, destination, async (topicMessages) => (await options.kafka.producer()).sendBatch({ acks: -1, topicMessages }), unacknowledged);
  }

  /**
   * Publishes one claim of `lanes`: each lane's records in order, the lanes side by side. Marks
   * sent (and parks the refused) in one short transaction once Kafka acked, never holding a
   * transaction open across a Kafka request; a crash before that re-sends (at-least-once). A lane
   * whose send failed is left unsent and the failure thrown, after the others were marked.
   * `more`: rows were left waiting.
   */
  async function relayClaim(lanes: readonly number[]): Promise<{ sent: number; more: boolean }> {
    if (!topicsReady) {
      await options.kafka.ensureTopics();
      topicsReady = true;
    }
    const { records, more } = await claimOutbox(db, lanes, batchSize);
    if (records.length === 0) return { sent: 0, more };
    const byLane = new Map<number, OutboxRecord[]>();
    for (const record of records) byLane.set(record.lane, [...(byLane.get(record.lane) ?? []), record]);
    // A claim is its own trace, linked to the traces of the changes it publishes.
    const outcomes = await inSpan('outbox relay claim', {
      parent: null, links: records.slice(0, 32).map((r) => r.traceparent), attributes: { 'messaging.batch.message_count': records.length },
    }, () => Promise.allSettled([...byLane.values()].map(async (lane) => ({ lane, refused: await publishInChunks(lane, send) }))));
    const done = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    const refused = done.flatMap((lane) => lane.refused);
    const published = done.flatMap((lane) => lane.lane);
    if (published.length > 0) {
      await db.transactional(async (tx) => {
        await parkRecords(tx, refused);
        await markOutboxSent(tx, published.map((r) => r.row));
      });
    }
    for (const { record, errorType } of refused) {
      log.error({ eventId: record.event_id, topic: record.topic, key: record.key, catalogId: record.catalog_id, errorType, byteSize: Buffer.byteLength(record.payload) },
        'the broker refused a record for good; it is parked (catalog outbox parked)');
    }
    const sent = published.length - refused.length;
    stats.parked += refused.length;
    if (sent > 0) {
      stats.published += sent;
      stats.batches += 1;
    }
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    return { sent, more };
  }

  async function cleanup(): Promise<void> {
    if (Date.now() - lastCleanup < cleanupIntervalMs) return;
    lastCleanup = Date.now();
    const cutoff = { events: new Date(Date.now() - eventRetentionMs), others: new Date(Date.now() - retentionMs) };
    let deleted = 0;
    for (;;) {
      const count = await deleteSentOutbox(db, cutoff, ROWS_PER_DELETE);
      deleted += count;
      if (count < ROWS_PER_DELETE || !running) break;
    }
    if (deleted > 0) log.info({ deleted }, 'deleted sent outbox rows');
    const versions = await purgeVersions(db, new Date(Date.now() - (options.itemVersionRetentionMs ?? 90 * 24 * 3600_000)), () => running);
    if (versions > 0) log.info({ deleted: versions }, 'deleted item versions older than their retention');
    const audited = await purgeAuditLog(db, new Date(Date.now() - (options.auditLogRetentionMs ?? 365 * 24 * 3600_000)), () => running);
    if (audited > 0) log.info({ deleted: audited }, 'deleted audit log entries older than their retention');
  }

  async function run(holder: LaneHolder): Promise<void> {
    let backoff = 0;
    let lastRebalance = 0;
    while (running) {
      try {
        // Between claims: a lane given up has nothing of this relay's in flight.
        if (Date.now() - lastRebalance >= LANE_CHECK_MS) {
          lastRebalance = Date.now();
          await holder.rebalance();
        }
        const lanes = holder.held();
        if (lanes.length === 0) {
          await nap(LANE_CHECK_MS, false);
          continue;
        }
        const { sent, more } = await relayClaim(lanes);
        if (backoff > 0) log.info({ sent }, 'outbox relay recovered');
        backoff = 0;
        await cleanup();
        // A full claim means more rows are waiting: go again without napping. A big partial one
        // means writers are busy: let the next claim gather what they commit meanwhile.
        if (more) continue;
        if (sent >= lingerAfterRows) await nap(lingerMs, false);
        else await nap(pollIntervalMs, true);
      } catch (error) {
        stats.failures += 1;
        stats.lastError = error instanceof Error ? error.message : String(error);
        // One warning an episode: the first failure, then the recovery at info.
        if (backoff === 0) log.warn({ err: error }, 'outbox batch not published; retrying with backoff until it is');
        else log.debug({ err: error, retryInMs: backoff }, 'outbox batch still not published');
        backoff = Math.min(backoff === 0 ? 500 : backoff * 2, maxBackoffMs);
        // Not cut short by NOTIFY: busy writers must not turn the backoff into a hot loop.
        await nap(backoff, false);
      }
    }
  }

  return {
    stats,
    async relayOnce() {
      const holder = createLaneHolder({ databaseUrl: options.databaseUrl, logger: log });
      try {
        await holder.rebalance();
        return (await relayClaim(holder.held())).sent;
      } finally {
        await holder.close();
      }
    },
    async start() {
      if (running) return;
      running = true;
      // Listening before the first claim: a commit after that claim's snapshot is then always notified.
      listener = listenToChannel({ databaseUrl: options.databaseUrl, channel: OUTBOX_CHANNEL, logger: log, onNotify: notified, onListening: listening });
      await listener.firstAttempt;
      lanes = createLaneHolder({ databaseUrl: options.databaseUrl, logger: log });
      loop = run(lanes);
      log.info({ batchSize, lingerMs, pollIntervalMs }, 'outbox relay started');
    },
    async stop() {
      if (!running) return;
      running = false;
      waiter?.finish();
      await loop;
      await lanes?.close();
      lanes = undefined;
      await listener?.close();
      listener = undefined;
      log.info(stats, 'outbox relay stopped');
    },
  };
}
