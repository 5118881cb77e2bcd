// Reads a request body within a size limit and checks its media type before parsing.
import type { IncomingMessage } from 'node:http';
import { httpError } from './errors.ts';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Reads the whole body; refuses (413) as soon as it passes `limit` bytes, declared or actual. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

const tooLarge = (limit: number) =>
  httpError('payload_too_large', `The request body exceeds the limit of ${limit} bytes.`);

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
