// Outgoing e-mail, configured once: nodemailer over SMTP_URL, or .eml files in <dataDir>/mail when no SMTP server is set.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Transporter } from 'nodemailer';
import { detached } from '../async-context.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';

export interface MailMessage {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

export interface Mailer {
  /** Resolves once the SMTP server accepted the message (or the file is written); throws otherwise. */
  send(message: MailMessage): Promise<void>;
  close(): void;
}

/**
 * nodemailer and its transport on the first message: mail is rare (a webhook disabled), and the
 * library is among the largest a consumers process would otherwise hold from its start.
 */
function lazyTransport(options: string | Record<string, unknown>): { get: () => Promise<Transporter>; close: () => void } {
  let transport: Promise<Transporter> | undefined;
  return {
    get: () => (transport ??= detached(() => import('nodemailer')).then(({ default: nodemailer }) => nodemailer.createTransport(options))),
    close: () => void transport?.then((opened) => opened.close(), () => undefined),
  };
}

export function createMailer(config: Pick<Config, 'smtpUrl' | 'mailFrom' | 'dataDir'>, logger: Logger): Mailer {
  const log = logger.child({ component: 'mail' });
  if (config.smtpUrl) {
    const transport = lazyTransport(config.smtpUrl);
    return {
      async send(message) {
        const info = await (await transport.get()).sendMail({ from: config.mailFrom, ...message });
        log.info({ to: message.to, subject: message.subject, messageId: info.messageId }, 'mail sent');
      },
      close: transport.close,
    };
  }
  // Local development: the message is composed exactly as it would be sent and kept on disk.
  const folder = join(config.dataDir, 'mail');
  const transport = lazyTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(message) {
      const info = await (await transport.get()).sendMail({ from: config.mailFrom, ...message });
      await mkdir(folder, { recursive: true });
      const file = join(folder, `${new Date().toISOString().replaceAll(':', '-')}-${String(info.messageId).replace(/[^A-Za-z0-9.@-]/g, '')}.eml`);
      // Written aside, then renamed: whoever watches the folder never reads a half-written message.
      await writeFile(`${file}.part`, info.message as Buffer);
      await rename(`${file}.part`, file);
      log.info({ to: message.to, subject: message.subject, file }, 'no SMTP_URL: mail written to a file');
    },
    close: transport.close,
  };
}
