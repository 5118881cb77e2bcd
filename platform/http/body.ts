// Reads a request body within a size limit and checks its media type before parsing; settles
// the unread rest of a refused body so that the answer reaches the client.
import type { IncomingMessage } from 'node:http';
import { httpError } from './errors.ts';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

// The unread rest of a refused body is read and thrown away, up to this many bytes and for at
// most this long, before answering: the connection then carries the client's next request
// (Deno's node:http resets a keep-alive connection whose request body was left unread). Larger
// or slower bodies are answered with `Connection: close` (see transport.ts, lingerAfterAnswer).
export const DRAIN_LIMIT = 8 * 1024 * 1024;
const DRAIN_TIMEOUT_MS = 10_000;

/**
 * Reads the whole body; refuses (413) as soon as it passes `limit` bytes, declared or actual.
 * On refusal the request is only paused, never destroyed, so that the refusal can still be
 * answered on this connection (see `settleUnreadBody`).
 */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (outcome: () => void) => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      outcome();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else settle(() => { req.pause(); reject(tooLarge(limit)); });
    };
    const onEnd = () => settle(() => resolve(Buffer.concat(chunks, size)));
    const onError = (error: Error) => settle(() => reject(error));
    const onClose = () => settle(() => reject(new Error('the client closed the connection before the body was complete')));
    req.on('data', onData).once('end', onEnd).once('error', onError).once('close', onClose);
  });
}

const tooLarge = (limit: number) =>
  httpError('payload_too_large', `The request body exceeds the limit of ${limit} bytes.`);

/** Whether the request came with a body that has not been read to its end. */
export function hasUnreadBody(req: IncomingMessage): boolean {
  if (req.readableEnded || req.destroyed) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Before refusing a request: reads and discards the rest of its body within DRAIN_LIMIT and
 * DRAIN_TIMEOUT_MS. Resolves `keep-alive` when the body was read to its end (or there was
 * none), `close` when the answer must close the connection.
 */
export function settleUnreadBody(req: IncomingMessage): Promise<'keep-alive' | 'close'> {
  if (!hasUnreadBody(req)) return Promise.resolve('keep-alive');
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > DRAIN_LIMIT) return Promise.resolve('close');
  return new Promise((resolve) => {
    let drained = 0;
    const timer = setTimeout(() => finish('close'), DRAIN_TIMEOUT_MS);
    const finish = (verdict: 'keep-alive' | 'close') => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', onGone).off('close', onGone);
      if (verdict === 'close') req.pause();
      resolve(verdict);
    };
    const onData = (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > DRAIN_LIMIT) finish('close');
    };
    const onEnd = () => finish('keep-alive');
    const onGone = () => finish('close');
    req.on('data', onData).once('end', onEnd).once('error', onGone).once('close', onGone);
    req.resume();
  });
}

/** The media type without parameters, lower-cased: `application/json; charset=utf-8` → `application/json`. */
export function mediaType(header: string | undefined): string | undefined {
  return header?.split(';')[0]?.trim().toLowerCase() || undefined;
}

export function parseJsonBody(raw: Buffer, contentType: string | undefined): unknown {
  const type = mediaType(contentType);
  if (type !== 'application/json' && !(type?.startsWith('application/') && type.endsWith('+json'))) {
    throw httpError('unsupported_media_type', 'The request body must be sent as Content-Type: application/json.');
  }
  const charset = /charset=([^;]+)/i.exec(contentType ?? '')?.[1]?.trim().toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8') {
    throw httpError('unsupported_media_type', 'JSON request bodies must be UTF-8.');
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    throw httpError('validation_error', 'The request body is not valid UTF-8.', [
      { path: 'body', message: 'must be UTF-8 encoded' },
    ]);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw httpError('validation_error', 'The request body is not valid JSON.', [
      { path: 'body', message: (error as Error).message },
    ]);
  }
}
