// The outbox relay: publishes committed outbox rows to Kafka in id order and marks them sent only after Kafka acked.
import type { Message } from 'kafkajs';
import { OUTBOX_CHANNEL, claimOutbox, deleteSentOutbox, markOutboxSent, recordHeaders } from '../../domain/events/outbox.ts';
import type { OutboxRecord } from '../../domain/events/outbox.ts';
import { parkRecords } from '../../domain/events/parked.ts';
import type { Refusal } from '../../domain/events/parked.ts';
import { itemRecordOf } from '../../domain/items/changelog.ts';
import { purgeVersions } from '../../domain/items/versions.ts';
import { listenToChannel } from '../../platform/db/connections.ts';
import type { ChannelListener } from '../../platform/db/connections.ts';
import type { Orm } from '../../platform/db/orm.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import { TOPICS } from '../../platform/kafka/topics.ts';
import type { Logger } from '../../platform/log/logger.ts';

export interface OutboxRelayOptions {
  /** Its statements run on the ORM's pool. */
  readonly orm: Orm;
  /** For its LISTEN, which holds a connection of its own. */
  readonly databaseUrl: string;
  readonly kafka: KafkaClient;
  readonly logger: Logger;
  /** Records a claim takes at most, in whole outbox rows (one row at least, whatever its size). */
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
  readonly cleanupIntervalMs?: number;
}

export interface OutboxRelayStats {
  published: number;
  batches: number;
  /** Records the broker refused for good, set aside (domain/events/parked.ts). */
  parked: number;
  failures: number;
  lastError: string | undefined;
}

export interface OutboxRelay {
  start(): Promise<void>;
  /** Finishes the in-flight batch (committed or rolled back), then closes its connections. */
  stop(): Promise<void>;
  /** Publishes one claim now; returns how many records it sent. For tests and the CLI. */
  relayOnce(): Promise<number>;
  readonly stats: Readonly<OutboxRelayStats>;
}

// Kafka's default message.max.bytes (1 MB) caps one record batch, which kafkajs builds per
// partition per send; staying under it in total per send keeps large events from wedging the relay.
const MAX_SEND_BYTES = 900_000;

// The broker's answers that refuse a record itself, whatever the retries: too large, or not a
// valid record. Anything else (a broker away, a leader moving) is waited out and retried.
const REFUSED_FOR_GOOD = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE', 'INVALID_TIMESTAMP']);

/** The broker's error type when it refused the records for good; undefined for any other failure. */
function refusedForGood(error: unknown): string | undefined {
  for (let e = error; e instanceof Error; e = (e as { cause?: unknown; originalError?: unknown }).cause ?? (e as { originalError?: unknown }).originalError) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string' && REFUSED_FOR_GOOD.has(type)) return type;
  }
  return undefined;
}

// Small deletes keep each transaction short next to the writers: a row holds up to 1,000 records.
const ROWS_PER_DELETE = 200;

function chunksBySize(rows: readonly OutboxRecord[]): OutboxRecord[][] {
  const chunks: OutboxRecord[][] = [];
  let current: OutboxRecord[] = [];
  let bytes = 0;
  for (const row of rows) {
    // An item event's changelog record is at most its payload again; each of the two carries
    // the five headers (about 170 bytes) and a record's framing.
    const size = 2 * (Buffer.byteLength(row.payload) + Buffer.byteLength(row.key)) + 400;
    if (current.length > 0 && bytes + size > MAX_SEND_BYTES) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(row);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * The record's messages, by topic: its own, and for an item event the item's changelog record
 * (with the event's key and headers). Both are stamped with the time their change was written,
 * not the publishing time (docs/design.md, "The item changelog").
 */
function addMessages(byTopic: Map<string, Message[]>, row: OutboxRecord, topicOf: (logical: string) => string): void {
  const add = (topic: string, message: Message) => {
    const messages = byTopic.get(topic);
    if (messages) messages.push(message);
    else byTopic.set(topic, [message]);
  };
  const headers = recordHeaders(row);
  add(topicOf(row.topic), { key: row.key, value: row.payload, headers, timestamp: row.committed_at });
  const record = itemRecordOf(row);
  if (record) add(topicOf(TOPICS.items), { key: row.key, value: record.value, headers, timestamp: row.committed_at });
}

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
  const stats: OutboxRelayStats = { published: 0, batches: 0, parked: 0, failures: 0, lastError: undefined };

  let running = false;
  let loop: Promise<void> | undefined;
  let listener: ChannelListener | undefined;
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

  async function send(records: readonly OutboxRecord[]): Promise<void> {
    const byTopic = new Map<string, Message[]>();
    for (const record of records) addMessages(byTopic, record, options.kafka.topic);
    await (await options.kafka.producer()).sendBatch({
      acks: -1,
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
    });
  }

  /**
   * Sends the records, chunk by chunk; returns those the broker refused for good. A chunk it
   * refused is sent again a record at a time, to find which: one tenant's record must not hold
   * up every later one.
   */
  async function publish(records: readonly OutboxRecord[]): Promise<Refusal[]> {
    const refused: Refusal[] = [];
    for (const chunk of chunksBySize(records)) {
      try {
        await send(chunk);
      } catch (error) {
        if (refusedForGood(error) === undefined) throw error;
        for (const record of chunk) {
          try {
            await send([record]);
          } catch (alone) {
            const errorType = refusedForGood(alone);
            if (errorType === undefined) throw alone;
            refused.push({ record, errorType, reason: (alone as Error).message });
          }
        }
      }
    }
    return refused;
  }

  /** Publishes one claim; `more`: rows were left waiting. */
  async function relayClaim(): Promise<{ sent: number; more: boolean }> {
    if (!topicsReady) {
      await options.kafka.ensureTopics();
      topicsReady = true;
    }
    const claim = await db.transactional(async (tx) => {
      const { records, more } = await claimOutbox(tx, batchSize);
      if (records.length === 0) return { sent: 0, more, refused: [] };
      const refused = await publish(records);
      await parkRecords(tx, refused);
      // Only after every chunk was acked or parked: a crash before this commit re-sends (at-least-once).
      await markOutboxSent(tx, records.map((r) => r.row));
      return { sent: records.length - refused.length, more, refused };
    });
    for (const { record, errorType } of claim.refused) {
      log.error({ eventId: record.event_id, topic: record.topic, key: record.key, catalogId: record.catalog_id, errorType, byteSize: Buffer.byteLength(record.payload) },
        'the broker refused a record for good; it is parked (catalog outbox parked)');
    }
    stats.parked += claim.refused.length;
    if (claim.sent > 0) {
      stats.published += claim.sent;
      stats.batches += 1;
    }
    return claim;
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
  }

  async function run(): Promise<void> {
    let backoff = 0;
    while (running) {
      try {
        const { sent, more } = await relayClaim();
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
        backoff = Math.min(backoff === 0 ? 500 : backoff * 2, maxBackoffMs);
        log.warn({ err: error, retryInMs: backoff }, 'outbox batch not published; rolled back, will retry');
        // Not cut short by NOTIFY: busy writers must not turn the backoff into a hot loop.
        await nap(backoff, false);
      }
    }
  }

  return {
    stats,
    relayOnce: async () => (await relayClaim()).sent,
    async start() {
      if (running) return;
      running = true;
      // Listening before the first claim: a commit after that claim's snapshot is then always notified.
      listener = listenToChannel({ databaseUrl: options.databaseUrl, channel: OUTBOX_CHANNEL, logger: log, onNotify: notified, onListening: listening });
      await listener.firstAttempt;
      loop = run();
      log.info({ batchSize, lingerMs, pollIntervalMs }, 'outbox relay started');
    },
    async stop() {
      if (!running) return;
      running = false;
      waiter?.finish();
      await loop;
      await listener?.close();
      listener = undefined;
      log.info(stats, 'outbox relay stopped');
    },
  };
}
