// Raw HTTP/1.1 on one TCP connection, for what fetch cannot send (oversized headers, bad framing)
// and to see exactly what the server answers on that connection; runs under Node and Deno.
import { connect } from 'node:net';
import type { Socket } from 'node:net';

export interface RawResponse {
  status: number;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: string;
}

/** One response off the front of `data` (Content-Length or chunked framing), or undefined while incomplete. */
export function parseResponse(data: Buffer): { response: RawResponse; rest: Buffer } | undefined {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const [statusLine = '', ...lines] = data.subarray(0, headEnd).toString('latin1').split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!match) throw new Error(`not an HTTP/1.1 status line: ${JSON.stringify(statusLine.slice(0, 200))}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let offset = headEnd + 4;
  let body: Buffer;
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
    const parts: Buffer[] = [];
    for (;;) {
      const sizeEnd = data.indexOf('\r\n', offset);
      if (sizeEnd < 0) return undefined;
      const size = Number.parseInt(data.subarray(offset, sizeEnd).toString('latin1'), 16);
      if (data.length < sizeEnd + 2 + size + 2) return undefined;
      parts.push(data.subarray(sizeEnd + 2, sizeEnd + 2 + size));
      offset = sizeEnd + 2 + size + 2;
      if (size === 0) break;
    }
    body = Buffer.concat(parts);
  } else {
    const length = Number(headers['content-length'] ?? 0);
    if (data.length < offset + length) return undefined;
    body = data.subarray(offset, offset + length);
    offset += length;
  }
  return { response: { status: Number(match[1]), headers, body: body.toString('utf8') }, rest: data.subarray(offset) };
}

/** One client connection: write requests, read the responses in order. */
export class RawConnection {
  readonly socket: Socket;
  /** Errors of the socket (a reset, EPIPE on write), as `code: message`. */
  readonly errors: string[] = [];
  /** Resolves when the connection is closed, by either side. */
  readonly closed: Promise<void>;
  private buffered: Buffer = Buffer.alloc(0);
  private wake: (() => void) | undefined;
  private ended = false;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      this.wake?.();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => this.errors.push(`${error.code}: ${error.message}`));
    this.closed = new Promise((resolve) => socket.once('close', () => {
      this.ended = true;
      this.wake?.();
      resolve();
    }));
  }

  /** Connects to the host and port of `url` (`http://host:port…`). */
  static open(url: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port) });
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RawConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  write(bytes: string | Buffer): void {
    this.socket.write(bytes);
  }

  /** The next whole response; rejects when the connection closes before it arrived. */
  async next(): Promise<RawResponse> {
    for (;;) {
      const parsed = parseResponse(this.buffered);
      if (parsed) {
        this.buffered = parsed.rest;
        return parsed.response;
      }
      if (this.ended) {
        const got = this.buffered.toString('latin1').slice(0, 300);
        throw new Error(`the connection closed before a whole response arrived (received ${JSON.stringify(got)}; errors: ${this.errors.join('; ') || 'none'})`);
      }
      await new Promise<void>((resolve) => { this.wake = resolve; });
      this.wake = undefined;
    }
  }

  /** Whatever arrived after the responses read so far. */
  leftover(): string {
    return this.buffered.toString('latin1');
  }

  close(): void {
    this.socket.destroy();
  }
}

/** A request as bytes: the head with `Host` and `Content-Length` filled in, then the body. */
export function rawRequest(method: string, target: string, headers: Record<string, string>, body: string | Buffer = ''): Buffer {
  const payload = typeof body === 'string' ? Buffer.from(body) : body;
  const all: Record<string, string> = { host: 'localhost', ...headers };
  if (payload.length > 0 && all['transfer-encoding'] === undefined) all['content-length'] ??= String(payload.length);
  const head = `${method} ${target} HTTP/1.1\r\n${Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), payload]);
}
