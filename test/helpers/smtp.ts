// A real SMTP server (smtp-server) on loopback that keeps every message it accepts, for the e-mail tests.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  readonly from: string;
  readonly to: string[];
  readonly raw: string;
  /** The body, quoted-printable decoded (what nodemailer sends for plain text). */
  readonly text: string;
}

function decodeBody(raw: string): string {
  const [head = '', ...rest] = raw.split('\r\n\r\n');
  const body = rest.join('\r\n\r\n');
  if (!/content-transfer-encoding:\s*quoted-printable/i.test(head)) return body;
  return Buffer.from(body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8');
}

export interface TestSmtp {
  readonly url: string;
  readonly messages: ReceivedMail[];
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

export async function startSmtp(): Promise<TestSmtp> {
  const messages: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    // Plain SMTP on loopback: no certificate to make, nothing to authenticate.
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          text: decodeBody(raw),
        });
        callback();
      });
    },
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    async waitFor(count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${count} e-mail(s); got ${messages.length}`);
        await new Promise((done) => setTimeout(done, 20));
      }
      return [...messages];
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}
