// The connection level: answers what Node's HTTP parser refuses in the error envelope, and closes
// connections so that a last answer reaches a client that is still sending.
import { STATUS_CODES, maxHeaderSize } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../errors.ts';
import type { Logger } from '../log/logger.ts';
import { httpError, renderError } from './errors.ts';

// Closing a socket with unread input makes the kernel send a reset, which can destroy an answer
// still in flight and fails the client's writes (EPIPE); so a closing server half-closes and
// discards input until the client has closed its side, for at most this long.
const LINGER_MS = 5_000;

export const newRequestId = (): string => `req_${randomUUID().replaceAll('-', '')}`;

/**
 * Ends `socket` (after what was written to it is flushed), reads and discards its input until
 * the client closes its side or `input` (a request still being received) ends, then closes;
 * after LINGER_MS it closes whatever the client is doing.
 */
export function lingeringClose(socket: Duplex, input?: IncomingMessage): void {
  const close = () => socket.destroy();
  const timer = setTimeout(close, LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', close);
  input?.once('end', close);
  socket.end();
  if (input) input.resume();
  else socket.resume();
}

/**
 * For an answer sent with `Connection: close` while the body of `req` is still arriving. Node's
 * server ends such a connection through the socket's `destroySoon`, which destroys it as soon
 * as the answer is written; this connection lingers instead.
 */
export function lingerAfterAnswer(req: IncomingMessage): void {
  const socket = req.socket as Duplex & { destroySoon?: () => void };
  socket.destroySoon = () => lingeringClose(socket, req);
}

interface ClientError extends Error {
  code?: string;
  reason?: string;
}

/** The code of the error envelope for an error of the HTTP parser, or undefined for a socket error. */
export function clientErrorCode(error: ClientError): { code: ErrorCode; message: string } | undefined {
  const code = error.code ?? '';
  if (code === 'HPE_HEADER_OVERFLOW') {
    return { code: 'request_header_fields_too_large', message: `The request line and headers exceed ${maxHeaderSize} bytes.` };
  }
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') {
    return { code: 'payload_too_large', message: 'The chunk extensions of the request body are too large.' };
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return { code: 'request_timeout', message: 'The request did not arrive completely in time.' };
  }
  if (code.startsWith('HPE_')) {
    const reason = typeof error.reason === 'string' && error.reason !== '' ? ` (${error.reason})` : '';
    return { code: 'bad_request', message: `The request is not a well-formed HTTP/1.1 message${reason}.` };
  }
  return undefined;
}

/** A whole HTTP/1.1 answer in the error envelope, written straight to a socket. */
export function rawErrorResponse(code: ErrorCode, message: string, requestId: string): { status: number; bytes: Buffer } {
  const { status, body } = renderError(httpError(code, message), requestId);
  const payload = JSON.stringify(body);
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(payload)}`,
    `X-Request-Id: ${requestId}`,
    'Cache-Control: no-store',
    'Connection: close',
  ];
  return { status, bytes: Buffer.from(`${head.join('\r\n')}\r\n\r\n${payload}`, 'utf8') };
}

const answered = new WeakSet<Duplex>();

/**
 * The server's `clientError` listener: a request the parser refuses (headers over the limit,
 * bad framing, too slow) is answered in the envelope with an X-Request-Id, then the connection
 * closes. A broken or reset socket is just closed, and so is one whose answer has started
 * (Node's `_httpMessage`, as Node itself checks): another answer would corrupt it. A body
 * whose framing breaks after its request reached a handler is answered here, as by Node.
 */
export function answerClientError(logger: Logger): (error: ClientError, socket: Duplex) => void {
  return (error, socket) => {
    // The parser reports again on every later chunk and at the end of input: answer once.
    if (answered.has(socket)) return;
    answered.add(socket);
    const refusal = clientErrorCode(error);
    const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!refusal || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const requestId = newRequestId();
    const { status, bytes } = rawErrorResponse(refusal.code, refusal.message, requestId);
    logger.info({ requestId, status, parserError: error.code }, 'request refused by the HTTP parser');
    socket.write(bytes);
    lingeringClose(socket);
  };
}
