// Prometheus metrics of the process, one registry built by the root: HTTP traffic, import lines, webhook attempts and backlogs, outbox lag, runtime.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { detached } from './async-context.ts';

// Within Prometheus' default scrape timeout (10 s), with room for the rest of the scrape.
const LAG_TIMEOUT_MS = 5000;
// The webhook backlogs are read at most this often, however many scrapers ask: one grouped
// statement over the pending deliveries, which a large backlog makes the costliest of a scrape.
export const WEBHOOK_BACKLOG_MAX_AGE_MS = 5000;

export interface Metrics {
  readonly registry: Registry;
  readonly requests: Counter<'method' | 'operation' | 'status'>;
  readonly duration: Histogram<'method' | 'operation'>;
  /** Import lines committed, by outcome: created, updated, unchanged, failed (a line error). */
  readonly importLines: Counter<'outcome'>;
  /** Webhook delivery attempts, by outcome: succeeded, failed (another attempt follows), exhausted. */
  readonly deliveryAttempts: Counter<'outcome'>;
  /** Time of each database statement run through `query`, by its name (platform/db/sql.ts). */
  readonly statementDuration: Histogram<'statement'>;
  /** Webhooks disabled after consecutive exhausted deliveries. */
  readonly webhooksDisabled: Counter;
  /** Import runs that failed: failed (the sweeper retries it), parked (failed for good). */
  readonly importFailures: Counter<'outcome'>;
  /** Media jobs finished, by outcome: ingested, not_modified, unchanged, failed, skipped. */
  readonly mediaJobs: Counter<'outcome'>;
  /** Tries of the contract's lag-tolerant reads (`x-read-replica`), by where they ran: replica or primary. Only with a read replica. */
  readonly reads: Counter<'target'>;
}

/** The events the outbox holds that the relay has not published yet. */
export interface OutboxBacklog {
  readonly pending: number;
  /** Age of the oldest of them, in seconds; 0 when there are none. */
  readonly lagSeconds: number;
  /** Records the broker refused for good, set aside and not re-sent. */
  readonly parked: number;
}

/** One webhook's pending deliveries (those its API answer counts as `backlog.waiting`). */
export interface WebhookBacklog {
  readonly webhookId: string;
  readonly catalogId: string;
  /** The webhook's status: a disabled webhook's deliveries wait for it to be resumed. */
  readonly status: string;
  readonly waiting: number;
  /** Age of the oldest of them, in seconds. */
  readonly oldestAgeSeconds: number;
}

export interface MetricsOptions {
  /** Read at every scrape. When it fails (the database is away) the outbox series read NaN: unknown, not zero. */
  readonly outboxBacklog?: () => Promise<OutboxBacklog>;
  /** The readiness checks (cached for a second), read at every scrape: 1 per dependency that answers. */
  readonly dependencies?: () => Promise<Readonly<Record<string, string>>>;
  /** The lag of the consumer groups this process runs, read at every scrape. */
  readonly consumerLag?: () => Promise<ReadonlyArray<{ group: string; topic: string; messages: number }>>;
  /** The read replica's lag as its last background check read it (NaN: not answering); only when one is configured. */
  readonly readReplicaLag?: () => number;
  /**
   * Every webhook with pending deliveries, read at a scrape at most every WEBHOOK_BACKLOG_MAX_AGE_MS.
   * When it fails the last reading stays (the caller logs why).
   */
  readonly webhookBacklogs?: () => Promise<readonly WebhookBacklog[]>;
}

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'catalog' });
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'catalog_http_requests_total',
    help: 'HTTP requests answered, by operation and status.',
    labelNames: ['method', 'operation', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'catalog_http_request_duration_seconds',
    help: 'Time from request to the last byte of the response.',
    labelNames: ['method', 'operation'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const importLines = new Counter({
    name: 'catalog_import_lines_total',
    help: 'Import lines committed by this process, by outcome (a dry run counts what it would have done).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const deliveryAttempts = new Counter({
    name: 'catalog_webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts made by this process, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const statementDuration = new Histogram({
    name: 'catalog_db_statement_duration_seconds',
    help: 'Time of each database statement, from sending it to its last row, by statement name ("unnamed" for those without one).',
    labelNames: ['statement'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const counter = (name: string, help: string, labelNames: readonly string[] = []) => new Counter({ name, help, labelNames, registers: [registry] });
  const webhooksDisabled = counter('catalog_webhooks_disabled_total', 'Webhooks this process disabled after consecutive exhausted deliveries.');
  const importFailures = counter('catalog_import_failures_total', 'Import runs that failed in this process: failed (retried by the sweeper), parked (failed for good).', ['outcome']);
  const mediaJobs = counter('catalog_media_jobs_total', 'Media jobs this process finished, by outcome (ingested, not_modified, unchanged, failed, skipped).', ['outcome']);
  const reads = counter('catalog_db_reads_total', 'Tries of the reads the contract lets a replica answer (x-read-replica), by where they ran (replica, primary).', ['target']);
  const { dependencies, consumerLag, readReplicaLag } = options;
  if (readReplicaLag) {
    // Both series from the start, so that a rate over them is defined before the first fallback.
    for (const target of ['replica', 'primary']) reads.inc({ target }, 0);
    new Gauge({
      name: 'catalog_db_read_replica_lag_seconds', help: 'The read replica\'s replay lag at its last background check; NaN while it does not answer or is not streaming.',
      registers: [registry],
      collect() {
        this.set(readReplicaLag());
      },
    });
  }
  if (dependencies) {
    new Gauge({
      name: 'catalog_dependency_up', help: 'Whether a dependency answered the readiness check (1) or not (0), as /readyz reports it.',
      labelNames: ['dependency'] as const, registers: [registry],
      async collect() {
        this.reset();
        for (const [dependency, check] of Object.entries(await detached(dependencies))) this.set({ dependency }, check === 'ok' ? 1 : 0);
      },
    });
  }
  if (consumerLag) {
    new Gauge({
      name: 'catalog_kafka_consumer_lag_messages', help: 'Messages on a topic that a consumer group of this process has not committed yet.',
      labelNames: ['group', 'topic'] as const, registers: [registry],
      async collect() {
        // Unknown while Kafka is away: no series rather than a zero that would read as caught up.
        this.reset();
        const lags = await Promise.race([detached(consumerLag), new Promise<[]>((resolve) => setTimeout(() => resolve([]), LAG_TIMEOUT_MS).unref())]).catch(() => []);
        for (const { group, topic, messages } of lags) this.set({ group, topic }, messages);
      },
    });
  }
  const backlog = options.outboxBacklog;
  if (backlog) {
    // The series come from one reading, taken by whichever is collected first.
    let reading: Promise<OutboxBacklog | undefined> | undefined;
    const read = () => {
      reading ??= detached(backlog).catch(() => undefined).finally(() => setImmediate(() => { reading = undefined; }));
      return reading;
    };
    const series = [
      ['catalog_outbox_pending_events', 'Records committed to the outbox (events, changelog records, work messages) and not yet published to Kafka.', 'pending'],
      ['catalog_outbox_lag_seconds', 'Age of the oldest event not yet published to Kafka (0 when none waits).', 'lagSeconds'],
      ['catalog_outbox_parked_records', 'Records the broker refused for good (too large, invalid), set aside and not re-sent yet.', 'parked'],
    ] as const;
    for (const [name, help, field] of series) {
      new Gauge({
        name, help, registers: [registry],
        async collect() {
          const now = await read();
          this.set(now ? now[field] : Number.NaN);
        },
      });
    }
  }
  if (options.webhookBacklogs) webhookBacklogGauges(registry, options.webhookBacklogs);
  return { registry, requests, duration, importLines, deliveryAttempts, statementDuration, webhooksDisabled, importFailures, mediaJobs, reads };
}

/**
 * catalog_webhook_backlog_deliveries and catalog_webhook_backlog_oldest_age_seconds: a series per
 * webhook with pending deliveries (docs/operations.md, "Health, readiness and metrics"), from one reading shared by both
 * and kept WEBHOOK_BACKLOG_MAX_AGE_MS. Each collect starts from empty, so a drained or deleted
 * webhook's series goes; a failed reading keeps the last one rather than a gap that would reset
 * an alert's `for`, and is tried again after the same interval.
 */
function webhookBacklogGauges(registry: Registry, webhookBacklogs: () => Promise<readonly WebhookBacklog[]>): void {
  let last: { at: number; backlogs: readonly WebhookBacklog[] } | undefined;
  let reading: Promise<readonly WebhookBacklog[]> | undefined;
  const read = (): Promise<readonly WebhookBacklog[]> => {
    if (last && Date.now() - last.at < WEBHOOK_BACKLOG_MAX_AGE_MS) return Promise.resolve(last.backlogs);
    reading ??= detached(webhookBacklogs)
      .catch(() => last?.backlogs ?? [])
      .then((backlogs) => {
        last = { at: Date.now(), backlogs };
        return backlogs;
      })
      .finally(() => { reading = undefined; });
    return reading;
  };
  const series = [
    ['catalog_webhook_backlog_deliveries', 'Pending deliveries of a webhook (waiting their turn, retrying or being attempted); only webhooks with some.', 'waiting'],
    ['catalog_webhook_backlog_oldest_age_seconds', 'Age of the oldest pending delivery of a webhook; only webhooks with pending deliveries.', 'oldestAgeSeconds'],
  ] as const;
  for (const [name, help, field] of series) {
    new Gauge({
      name, help, labelNames: ['webhook_id', 'catalog_id', 'status'] as const, registers: [registry],
      async collect() {
        const backlogs = await read();
        this.reset();
        for (const b of backlogs) this.set({ webhook_id: b.webhookId, catalog_id: b.catalogId, status: b.status }, b[field]);
      },
    });
  }
}
