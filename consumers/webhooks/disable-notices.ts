// E-mails the owner of each disabled webhook exactly once: claimed under a row lock, marked sent in the same transaction.
import { lockPendingNotice, markNoticeSent } from '../../domain/webhooks/disabling.ts';
import type { DisableNotice } from '../../domain/webhooks/disabling.ts';
import { detached } from '../../platform/async-context.ts';
import type { Db } from '../../platform/db/sql.ts';
import type { Logger } from '../../platform/log/logger.ts';
import type { MailMessage, Mailer } from '../../platform/mail/mailer.ts';

export function disableNoticeMail(notice: DisableNotice): MailMessage {
  return {
    to: notice.recipient,
    subject: `Webhook disabled: ${notice.url}`,
    text: [
      `The webhook ${notice.webhookId} of catalog "${notice.catalogName}" was disabled at ${notice.disabledAt.toISOString()}`,
      `after ${notice.consecutiveFailures} consecutive deliveries failed all their attempts.`,
      '',
      `Endpoint: ${notice.url}`,
      '',
      'No events are sent to it while it is disabled; its pending deliveries wait.',
      'Once the endpoint answers 2xx again:',
      `  POST /api/v1/catalog/webhooks/${notice.webhookId}/resume     re-enables it`,
      `  POST /api/v1/catalog/webhooks/${notice.webhookId}/recover    re-sends the failed deliveries of a time window`,
      `  GET  /api/v1/catalog/webhooks/${notice.webhookId}/deliveries?status=exhausted   shows what failed and why`,
    ].join('\n'),
  };
}

export interface DisableNotices {
  /** Sends every notice not sent yet; concurrent callers and instances split the work. */
  sweep(): Promise<void>;
}

export function createDisableNotices(db: Db, mailer: Mailer, logger: Logger): DisableNotices {
  const log = logger.child({ component: 'webhook-disable-notices' });
  let running: Promise<void> | undefined;
  // A sweep asked for while one runs is run again after it, so a late disable is never missed.
  let again = false;

  async function sendOne(): Promise<boolean> {
    const sent = await db.transactional(async (tx) => {
      const notice = await lockPendingNotice(tx);
      if (!notice) return undefined;
      // Sent while the row is locked and marked in the same transaction: a failed send rolls
      // back and is tried again at the next sweep; a crash after sending may repeat it once.
      await mailer.send(disableNoticeMail(notice));
      await markNoticeSent(tx, notice.webhookId);
      return notice;
    });
    if (sent) log.info({ webhookId: sent.webhookId }, 'owner told that the webhook is disabled');
    return sent !== undefined;
  }

  return {
    sweep() {
      if (running) {
        again = true;
        return running;
      }
      // Asked for from inside the dispatcher's settlement; it outlives that and shares nothing of it.
      running = detached(async () => {
        do {
          again = false;
          try {
            while (await sendOne()) { /* next one */ }
          } catch (error) {
            log.warn({ err: error }, 'disable notice not sent; will try again');
          }
        } while (again);
        running = undefined;
      });
      return running;
    },
  };
}
