// A real HTTP origin on loopback for media tests and the benchmark: sharp-made images with ETags and 304s, scripted misbehaviour, request counts.
import { hash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { deflateSync, crc32 } from 'node:zlib';
import sharp from 'sharp';

export type ImageFormat = 'png' | 'jpeg' | 'webp';

export interface Served {
  body: Buffer;
  contentType: string;
  /** Sent as ETag; a matching If-None-Match gets a 304. Null: no ETag at all. */
  etag: string | null;
}

/** A route's own behaviour; `nth` counts this path's requests of any method, from 1. */
export type Script = (req: IncomingMessage, res: ServerResponse, nth: number) => void;

export interface ImageOrigin {
  readonly url: string;
  readonly port: number;
  /** `http://127.0.0.1:<port><path>` */
  at(path: string): string;
  /** Serves bytes at a path (the query string is ignored when matching). */
  serve(path: string, served: Partial<Served> & { body: Buffer }): void;
  script(path: string, script: Script): void;
  gets(path: string): number;
  heads(path: string): number;
  /** Every GET so far, all paths together. */
  totalGets(): number;
  close(): Promise<void>;
}

/** A noise image (incompressible, so its size is predictable) of width × height in a format. */
export async function makeImage(format: ImageFormat, width: number, height: number, seed = 1): Promise<Buffer> {
  const raw = Buffer.allocUnsafe(width * height * 3);
  let state = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < raw.length; i++) {
    state ^= state << 13; state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5; state >>>= 0;
    raw[i] = state & 255;
  }
  const image = sharp(raw, { raw: { width, height, channels: 3 } });
  return format === 'png' ? image.png().toBuffer() : format === 'jpeg' ? image.jpeg({ quality: 90 }).toBuffer() : image.webp({ quality: 90 }).toBuffer();
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed) >>> 0);
  return Buffer.concat([length, typed, crc]);
}

/**
 * A valid, tiny PNG (a few tens of KB) that decodes to a huge canvas: 1-bit grey, all zeros,
 * deflated. 20,000 × 20,000 = 400 MP; decoded as RGBA it would need 1.6 GB.
 */
export function decompressionBomb(side = 20_000): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(side, 0);
  header.writeUInt32BE(side, 4);
  header[8] = 1; // bit depth
  header[9] = 0; // greyscale
  const rows = Buffer.alloc((1 + Math.ceil(side / 8)) * side); // filter byte 0 + packed zeros per row
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    pngChunk('IHDR', header), pngChunk('IDAT', deflateSync(rows, { level: 9 })), pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

export async function startImageOrigin(): Promise<ImageOrigin> {
  const served = new Map<string, Served>();
  const scripts = new Map<string, Script>();
  const counts = new Map<string, { get: number; head: number; any: number }>();
  const sockets = new Set<Socket>();
  let totalGets = 0;

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://origin').pathname;
    const count = counts.get(path) ?? { get: 0, head: 0, any: 0 };
    counts.set(path, count);
    count.any += 1;
    if (req.method === 'GET') {
      count.get += 1;
      totalGets += 1;
    }
    if (req.method === 'HEAD') count.head += 1;
    const script = scripts.get(path);
    if (script) return script(req, res, count.any);
    const item = served.get(path);
    if (!item) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const headers: Record<string, string | number> = { 'content-type': item.contentType, 'cache-control': 'max-age=60' };
    if (item.etag !== null) headers.etag = item.etag;
    if (item.etag !== null && req.headers['if-none-match'] === item.etag) {
      res.writeHead(304, headers).end();
      return;
    }
    headers['content-length'] = item.body.length;
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : item.body);
  };

  const server: Server = createServer(handle);
  server.keepAliveTimeout = 5000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    at: (path) => `${url}${path}`,
    serve(path, item) {
      scripts.delete(path);
      const contentType = item.contentType ?? 'image/png';
      served.set(path, { body: item.body, contentType, etag: item.etag === undefined ? `"${hash('sha1', item.body, 'hex').slice(0, 20)}"` : item.etag });
    },
    script: (path, script) => { scripts.set(path, script); },
    gets: (path) => counts.get(path)?.get ?? 0,
    heads: (path) => counts.get(path)?.head ?? 0,
    totalGets: () => totalGets,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
