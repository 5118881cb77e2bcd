// Starts the webhook workers of a consumers process: the fan-out consumer, the delivery dispatcher and the disable notices.
import type { Config } from '../../platform/config/config.ts';
import { createPool } from '../../platform/db/connections.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import type { Logger } from '../../platform/log/logger.ts';
import { createMailer } from '../../platform/mail/mailer.ts';
import { createDispatcher } from './dispatcher.ts';
import type { Dispatcher } from './dispatcher.ts';
import { createDisableNotices } from './disable-notices.ts';
import { startFanOut } from './fan-out.ts';

// Also catches notices a crashed process left unsent, and a mail server that was down.
const NOTICE_SWEEP_MS = 60_000;

export interface WebhookWorkers {
  readonly dispatcher: Dispatcher;
  stop(): Promise<void>;
}

export async function startWebhookWorkers(config: Config, kafka: KafkaClient, logger: Logger): Promise<WebhookWorkers> {
  // Creating deliveries must be durable before Kafka offsets move on: synchronous commits.
  const pool = createPool({ databaseUrl: config.databaseUrl, max: 4, name: 'webhooks', logger });
  // Claims and settlements are bookkeeping of an at-least-once process: if Postgres crashes and
  // loses the last few hundred milliseconds of them, the deliveries are simply attempted again
  // (receivers deduplicate by event id), so they do not wait for the WAL flush. Without fresh
  // statistics (a young or fast-growing table) the planner answers the claim with a bitmap scan
  // and a sort of every due row; the ordered walk of the due index is always right for it.
  const dispatchPool = createPool({
    databaseUrl: config.databaseUrl, max: 4, name: 'webhook-dispatch', logger, options: '-c synchronous_commit=off -c enable_bitmapscan=off',
  });
  const mailer = createMailer(config, logger);
  const notices = createDisableNotices(pool, mailer, logger);
  const dispatcher = createDispatcher({ config, pool: dispatchPool, logger, onDisabled: () => void notices.sweep() });
  // The dispatcher first: deliveries already in Postgres go out while the consumer joins its group.
  await dispatcher.start();
  const fanOut = await startFanOut({ kafka, pool, logger, dispatcher, firstDelayMs: config.webhookRetryDelaysMs[0] ?? 0 });
  void notices.sweep();
  const sweeper = setInterval(() => void notices.sweep(), NOTICE_SWEEP_MS);
  sweeper.unref();
  return {
    dispatcher,
    async stop() {
      clearInterval(sweeper);
      await fanOut.stop();
      await dispatcher.stop();
      await notices.sweep();
      mailer.close();
      await Promise.all([pool.end(), dispatchPool.end()]);
    },
  };
}
