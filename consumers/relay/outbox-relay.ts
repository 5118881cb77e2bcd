// The outbox relay: publishes committed outbox rows to Kafka in id order and marks them sent only after Kafka acked.
import type pg from 'pg';
import type { Message } from 'kafkajs';
import { OUTBOX_CHANNEL } from '../../domain/events/outbox.ts';
import { createPool, listenToChannel } from '../../platform/db/connections.ts';
import type { ChannelListener } from '../../platform/db/connections.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import type { Logger } from '../../platform/log/logger.ts';

export interface OutboxRelayOptions {
  readonly databaseUrl: string;
  /** Share an existing pool; otherwise the relay opens (and closes) a small one of its own. */
  readonly pool?: pg.Pool;
  readonly kafka: KafkaClient;
  readonly logger: Logger;
  readonly batchSize?: number;
  /**
   * While writers are busy, how long to wait before the next claim, so that it publishes what
   * several commits wrote in one Kafka request and one claim. "Busy": the last claim found at
   * least `lingerAfterRows` rows but did not fill a batch (an import commits 100 items and their
   * events every few milliseconds). After a smaller claim the relay waits for the next NOTIFY
   * instead, so an event written alone is published at once.
   */
  readonly lingerMs?: number;
  readonly lingerAfterRows?: number;
  /** Fallback poll when no NOTIFY arrives (a lost LISTEN connection, a writer with notify off). */
  readonly pollIntervalMs?: number;
  readonly maxBackoffMs?: number;
  /** Sent rows older than this are deleted. */
  readonly retentionMs?: number;
  readonly cleanupIntervalMs?: number;
}

export interface OutboxRelayStats {
  published: number;
  batches: number;
  failures: number;
  lastError: string | undefined;
}

export interface OutboxRelay {
  start(): Promise<void>;
  /** Finishes the in-flight batch (committed or rolled back), then closes its connections. */
  stop(): Promise<void>;
  /** Publishes one batch now; returns how many rows it sent. For tests and the CLI. */
  relayOnce(): Promise<number>;
  readonly stats: Readonly<OutboxRelayStats>;
}

interface OutboxRecord {
  id: string;
  event_id: string;
  topic: string;
  key: string;
  payload: string;
  headers: Record<string, string>;
}

// Kafka's default message.max.bytes (1 MB) caps one record batch, which kafkajs builds per
// partition per send; staying under it in total per send keeps large events from wedging the relay.
const MAX_SEND_BYTES = 900_000;
// Any constant works as long as every relay uses the same one.
const RELAY_LOCK_KEY = 0x6f7574626f78;

function chunksBySize(rows: readonly OutboxRecord[]): OutboxRecord[][] {
  const chunks: OutboxRecord[][] = [];
  let current: OutboxRecord[] = [];
  let bytes = 0;
  for (const row of rows) {
    const size = Buffer.byteLength(row.payload) + Buffer.byteLength(row.key) + 200;
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

function toMessage(row: OutboxRecord): Message {
  return { key: row.key, value: row.payload, headers: { ...row.headers, 'event-id': row.event_id } };
}

export function createOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const log = options.logger.child({ component: 'outbox-relay' });
  const batchSize = options.batchSize ?? 500;
  const lingerMs = options.lingerMs ?? 40;
  const lingerAfterRows = options.lingerAfterRows ?? 50;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const maxBackoffMs = options.maxBackoffMs ?? 30_000;
  const retentionMs = options.retentionMs ?? 24 * 3600_000;
  const cleanupIntervalMs = options.cleanupIntervalMs ?? 10 * 60_000;
  const ownPool = options.pool === undefined;
  const pool = options.pool ?? createPool({ databaseUrl: options.databaseUrl, max: 2, name: 'outbox-relay', logger: log });
  const stats: OutboxRelayStats = { published: 0, batches: 0, failures: 0, lastError: undefined };

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

  async function relayOnce(): Promise<number> {
    if (!topicsReady) {
      await options.kafka.ensureTopics();
      topicsReady = true;
    }
    const db = await pool.connect();
    let broken: Error | undefined;
    try {
      await db.query('BEGIN');
      // One relay publishes at a time, so rows with the same key reach Kafka in id order even
      // with several instances; SKIP LOCKED keeps it safe should that lock ever be dropped.
      const lock = await db.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [RELAY_LOCK_KEY]);
      if (!lock.rows[0]?.locked) {
        await db.query('ROLLBACK');
        return 0;
      }
      const claimed = await db.query<OutboxRecord>(
        `SELECT id, event_id, topic, key, payload, headers FROM outbox
          WHERE sent_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, [batchSize]);
      if (claimed.rows.length === 0) {
        await db.query('COMMIT');
        return 0;
      }
      for (const chunk of chunksBySize(claimed.rows)) {
        const byTopic = new Map<string, Message[]>();
        for (const row of chunk) {
          const topic = options.kafka.topic(row.topic);
          const messages = byTopic.get(topic);
          if (messages) messages.push(toMessage(row));
          else byTopic.set(topic, [toMessage(row)]);
        }
        await (await options.kafka.producer()).sendBatch({
          acks: -1,
          topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
        });
      }
      // Only after every chunk was acked: a crash before this commit re-sends (at-least-once).
      await db.query('UPDATE outbox SET sent_at = now() WHERE id = ANY($1::bigint[])', [claimed.rows.map((r) => r.id)]);
      await db.query('COMMIT');
      stats.published += claimed.rows.length;
      stats.batches += 1;
      return claimed.rows.length;
    } catch (error) {
      await db.query('ROLLBACK').catch((rollbackError: Error) => { broken = rollbackError; });
      throw error;
    } finally {
      db.release(broken);
    }
  }

  async function cleanup(): Promise<void> {
    if (Date.now() - lastCleanup < cleanupIntervalMs) return;
    lastCleanup = Date.now();
    const cutoff = new Date(Date.now() - retentionMs);
    let deleted = 0;
    // Small deletes keep each transaction short next to the writers.
    for (;;) {
      const result = await pool.query(
        `DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE sent_at < $1 ORDER BY id LIMIT 5000)`, [cutoff]);
      deleted += result.rowCount ?? 0;
      if ((result.rowCount ?? 0) < 5000 || !running) break;
    }
    if (deleted > 0) log.info({ deleted }, 'deleted sent outbox rows');
  }

  async function run(): Promise<void> {
    let backoff = 0;
    while (running) {
      try {
        const sent = await relayOnce();
        if (backoff > 0) log.info({ sent }, 'outbox relay recovered');
        backoff = 0;
        await cleanup();
        // A full batch means more rows are waiting: go again without napping. A big partial one
        // means writers are busy: let the next claim gather what they commit meanwhile.
        if (sent >= batchSize) continue;
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
    relayOnce,
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
      if (ownPool) await pool.end();
      log.info(stats, 'outbox relay stopped');
    },
  };
}
