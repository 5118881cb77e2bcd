// A real HTTP origin for import sources: a feed with validators, redirects, and the ways a source goes wrong; it records what it was sent.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface JsonlOrigin {
  readonly url: string;
  /** What /feed.jsonl serves; its ETag follows its bytes. */
  feed: Buffer;
  /** Every request: method, path and headers. */
  readonly requests: Array<{ method: string; path: string; headers: IncomingHttpHeaders }>;
  /** Where /elsewhere redirects to. */
  elsewhere: string;
  close(): Promise<void>;
}

const etagOf = (bytes: Buffer) => `"${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}"`;

export async function startJsonlOrigin(): Promise<JsonlOrigin> {
  let changes = 0;
  const origin: JsonlOrigin = {
    url: '', feed: Buffer.alloc(0), requests: [], elsewhere: '',
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url!, 'http://origin').pathname;
    origin.requests.push({ method: req.method!, path, headers: req.headers });
    const jsonl = { 'content-type': 'application/x-ndjson' };
    switch (path) {
      case '/feed.jsonl': {
        const etag = etagOf(origin.feed);
        if (req.headers['if-none-match'] === etag) return res.writeHead(304, { etag }).end();
        return res.writeHead(200, { ...jsonl, etag, 'content-length': origin.feed.length }).end(req.method === 'HEAD' ? undefined : origin.feed);
      }
      case '/redirect': return res.writeHead(302, { location: '/feed.jsonl' }).end();
      case '/elsewhere': return res.writeHead(307, { location: origin.elsewhere }).end();
      case '/page.html': return res.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
      case '/huge.jsonl': return res.writeHead(200, { ...jsonl, 'content-length': 100 * 1024 * 1024 + 1 }).end();
      case '/endless.jsonl': {
        // No length announced: the cap must hold while it streams.
        res.writeHead(200, jsonl);
        const chunk = Buffer.alloc(1024 * 1024, '{"externalSystem":"erp","externalId":"x","name":"x"}\n');
        const more = () => { while (res.write(chunk)); };
        res.on('drain', more);
        res.on('error', () => undefined);
        return more();
      }
      case '/cut.jsonl':
        res.writeHead(200, { ...jsonl, 'content-length': 1000 });
        res.write('{"externalSystem":"erp"');
        return setTimeout(() => res.destroy(), 50);
      case '/changing.jsonl': {
        changes += 1;
        return res.writeHead(200, { ...jsonl, etag: `"v${changes}"` }).end(req.method === 'HEAD' ? undefined : origin.feed);
      }
      default: return res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (origin as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return origin;
}
