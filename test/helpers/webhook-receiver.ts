// A real HTTP receiver on loopback for webhook tests: checks each signature with its own HMAC code and answers as scripted.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Receipt {
  readonly path: string;
  /** The request's query, `?` and all; empty without one. */
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: Buffer;
  readonly event: { id: string; type: string; catalogId: string; resourceId: string; createdAt: string; data: Record<string, unknown> };
  readonly receivedAt: number;
  /** Indexes of the path's registered secrets whose X-Service-Signature entry matched. */
  readonly signedWith: number[];
  /** Whether the Standard Webhooks signature matched one of the secrets. */
  readonly standardValid: boolean;
}

export interface Reply {
  readonly status?: number;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** Answer only after this long (to go past the sender's timeout). */
  readonly delayMs?: number;
  /** Never answer on its own: the request stays open until `releaseHeld()` or the client leaves. */
  readonly hold?: boolean;
}

export type Script = (receipt: Receipt, nth: number) => Reply;

export interface Receiver {
  readonly baseUrl: string;
  url(path: string): string;
  /** Replies for a path: a list used in order (the last one repeats) or a function. */
  script(path: string, replies: readonly Reply[] | Script): void;
  /** The secrets the receiver checks signatures of this path against. */
  secrets(path: string, secrets: readonly string[]): void;
  receipts(path?: string): Receipt[];
  waitFor(what: string, check: (receipts: Receipt[]) => boolean, timeoutMs?: number): Promise<Receipt[]>;
  releaseHeld(): void;
  close(): Promise<void>;
}

/** The receiver's own HMAC check, deliberately not the service's code. */
function matchingSecrets(header: string | undefined, body: Buffer, secrets: readonly string[]): number[] {
  if (!header) return [];
  const parts = header.split(',').map((p) => p.split('='));
  const t = parts.find(([k]) => k === 't')?.[1];
  const given = parts.filter(([k]) => k === 'v1').map(([, v]) => Buffer.from(v ?? '', 'hex'));
  if (!t) return [];
  const matched: number[] = [];
  secrets.forEach((secret, index) => {
    const expected = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
    if (given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))) matched.push(index);
  });
  return matched;
}

function standardMatches(headers: IncomingHttpHeaders, body: Buffer, secrets: readonly string[]): boolean {
  const id = headers['webhook-id'];
  const t = headers['webhook-timestamp'];
  const signatures = String(headers['webhook-signature'] ?? '').split(' ').map((s) => s.replace(/^v1,/, ''));
  return secrets.some((secret) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    const expected = createHmac('sha256', key).update(`${id}.${t}.`).update(body).digest('base64');
    return signatures.includes(expected);
  });
}

export interface ReceiverOptions {
  /** The address it listens on: loopback unless the sender runs elsewhere (in a container). */
  readonly listenHost?: string;
  /** The host name in its addresses, as the sender reaches it (`host.docker.internal`). */
  readonly publicHost?: string;
}

export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const scripts = new Map<string, readonly Reply[] | Script>();
  const secretsByPath = new Map<string, readonly string[]>();
  const all: Receipt[] = [];
  const counts = new Map<string, number>();
  const held = new Set<ServerResponse>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '/';
      const path = url.split('?')[0]!;
      const rawBody = Buffer.concat(chunks);
      const secrets = secretsByPath.get(path) ?? [];
      let event: Receipt['event'];
      try {
        event = JSON.parse(rawBody.toString('utf8'));
      } catch {
        event = { id: '', type: '', catalogId: '', resourceId: '', createdAt: '', data: {} };
      }
      const receipt: Receipt = {
        path, query: url.slice(path.length), headers: req.headers, rawBody, event, receivedAt: Date.now(),
        signedWith: matchingSecrets(req.headers['x-service-signature'] as string | undefined, rawBody, secrets),
        standardValid: standardMatches(req.headers, rawBody, secrets),
      };
      all.push(receipt);
      const nth = counts.get(path) ?? 0;
      counts.set(path, nth + 1);
      const script = scripts.get(path);
      const reply: Reply = typeof script === 'function' ? script(receipt, nth) : script?.[Math.min(nth, script.length - 1)] ?? {};
      const answer = () => {
        if (res.destroyed) return;
        res.writeHead(reply.status ?? 200, { 'content-type': 'text/plain', ...reply.headers });
        res.end(reply.body ?? 'ok');
      };
      if (reply.hold) {
        held.add(res);
        res.on('close', () => held.delete(res));
      } else if (reply.delayMs) {
        setTimeout(answer, reply.delayMs);
      } else {
        answer();
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  const listenHost = options.listenHost ?? '127.0.0.1';
  await new Promise<void>((done) => server.listen(0, listenHost, done));
  const baseUrl = `http://${options.publicHost ?? listenHost}:${(server.address() as AddressInfo).port}`;

  return {
    baseUrl,
    url: (path) => `${baseUrl}${path}`,
    script: (path, replies) => { scripts.set(path, replies); },
    secrets: (path, secrets) => { secretsByPath.set(path, secrets); },
    receipts: (path) => (path === undefined ? [...all] : all.filter((r) => r.path === path)),
    async waitFor(what, check, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!check(all)) {
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${all.length} receipts)`);
        await new Promise((done) => setTimeout(done, 10));
      }
      return [...all];
    },
    releaseHeld() {
      for (const res of held) res.destroy();
      held.clear();
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}
