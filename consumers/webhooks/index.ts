// Starts the webhook workers of a consumers process: the fan-out consumer, the delivery dispatcher and the disable notices.
import type { Config } from '../../platform/config/config.ts';
import type { SecretBox } from '../../platform/crypto/secret-box.ts';
import type { Orm } from '../../platform/db/orm.ts';
import type { KafkaClient } from '../../platform/kafka/client.ts';
import type { Logger } from '../../platform/log/logger.ts';
import type { Metrics } from '../../platform/metrics.ts';
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

export interface WebhookWorkersOptions {
  readonly config: Config;
  readonly kafka: KafkaClient;
  readonly orm: Orm;
  /** Opens the webhooks' secrets, sealed at rest, to sign each attempt. */
  readonly secrets: SecretBox;
  /** The process's metrics: each delivery attempt is counted. */
  readonly metrics?: Metrics;
  readonly logger: Logger;
}

export async function startWebhookWorkers({ config, kafka, orm, secrets, metrics, logger }: WebhookWorkersOptions): Promise<WebhookWorkers> {
  const db = orm.em.fork();
  const mailer = createMailer(config, logger);
  const notices = createDisableNotices(db, mailer, logger);
  const dispatcher = createDispatcher({
    config, db, secrets, logger,
    onDisabled: (webhookIds) => {
      metrics?.webhooksDisabled.inc(webhookIds.length);
      void notices.sweep();
    },
    ...(metrics ? { onAttempt: (outcome: string) => metrics.deliveryAttempts.inc({ outcome }) } : {}),
  });
  // The dispatcher first: deliveries already in Postgres go out while the consumer joins its group.
  await dispatcher.start();
  // A start that failed (Kafka away) leaves nothing running: the next attempt starts afresh.
  const fanOut = await startFanOut({ kafka, db, secrets, logger, dispatcher, firstDelayMs: config.webhookRetryDelaysMs[0] ?? 0 }).catch(async (error: unknown) => {
    await dispatcher.stop();
    mailer.close();
    throw error;
  });
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
    },
  };
}
