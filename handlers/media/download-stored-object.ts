// GET and HEAD of the local driver's signed image addresses (contract: downloadStoredObject, headStoredObject), served outside the API prefix without an API key.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { httpError } from '../../platform/http/errors.ts';
import type { RequestRecord } from '../../platform/http/api-pipeline.ts';
import { decodedSegment } from '../../platform/http/request-validation.ts';
import { sendError } from '../../platform/http/respond.ts';
import type { Services } from '../../platform/http/types.ts';
import { DOWNLOAD_ROUTE } from '../../platform/storage/local.ts';
import type { LocalStorage } from '../../platform/storage/local.ts';

type ExtraRoute = (req: IncomingMessage, res: ServerResponse, url: URL, requestId: string, record: RequestRecord) => Promise<boolean>;

// Only stored images are served, and their path ends with the SHA-256 of their bytes: the ETag.
const MEDIA_PATH = /^media\/[0-9a-f]{2}\/([0-9a-f]{64})$/;
const IMAGE_TYPE = /^image\/[a-z0-9.+-]+$/;

/** RFC 9110 §13.1.2: weak comparison, a list of tags, or `*`. */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').map((tag) => tag.trim().replace(/^W\//, '')).some((tag) => tag === '*' || tag === etag);
}

export function downloadRoute(services: Services): ExtraRoute {
  return async (req, res, url, requestId, record) => {
    if (!url.pathname.startsWith(DOWNLOAD_ROUTE)) return false;
    const head = req.method === 'HEAD';
    record.operationId = head ? 'headStoredObject' : 'downloadStoredObject';
    const headers: Record<string, string> = { 'x-request-id': requestId };
    const refuse = (error: Error) => sendError(res, error, requestId, headers);
    req.resume();
    try {
      if (req.method !== 'GET' && !head) {
        refuse(Object.assign(httpError('method_not_allowed', 'This path supports GET and HEAD only.'), { allow: 'GET, HEAD' }));
        return true;
      }
      const { storage } = services;
      if (storage.driver !== 'local') {
        refuse(httpError('not_implemented', 'Stored images are served by S3 at their presigned storedUrl; this service runs the s3 storage driver.'));
        return true;
      }
      const segment = url.pathname.slice(DOWNLOAD_ROUTE.length);
      const path = decodedSegment(segment) ?? ''; // not valid percent-encoding: an invalid path below
      const sha = segment.includes('/') ? undefined : MEDIA_PATH.exec(path)?.[1];
      const expiresText = url.searchParams.get('expires') ?? '';
      const type = url.searchParams.get('type') ?? '';
      const signature = url.searchParams.get('signature') ?? '';
      const details = [];
      if (!sha) details.push({ path: 'storagePath', message: 'must be the path of a stored image, percent-encoded as one segment' });
      if (!/^\d{1,12}$/.test(expiresText)) details.push({ path: 'query.expires', message: 'must be an integer (unix seconds)' });
      if (!IMAGE_TYPE.test(type)) details.push({ path: 'query.type', message: 'must be an image media type' });
      if (!/^[0-9a-f]{64}$/.test(signature)) details.push({ path: 'query.signature', message: 'must be 64 lowercase hex characters' });
      if (details.length > 0) {
        refuse(httpError('validation_error', 'The image address is not valid; use storedUrl exactly as returned.', details));
        return true;
      }
      const expires = Number(expiresText);
      if ((storage as LocalStorage).verifyDownload(path, expires, type, signature) !== 'ok') {
        refuse(httpError('forbidden', 'download address expired or signature invalid'));
        return true;
      }
      const stored = await storage.stat(path);
      if (!stored) {
        refuse(httpError('not_found', 'Nothing is stored at this address.'));
        return true;
      }
      const etag = `"${sha}"`;
      const maxAge = Math.max(0, expires - Math.floor(Date.now() / 1000));
      // The bytes behind a path never change: any cache may keep them until the address expires.
      const cached = { ...headers, etag, 'cache-control': `public, max-age=${maxAge}, immutable` };
      if (matches(req.headers['if-none-match'], etag)) {
        res.writeHead(304, cached).end();
        return true;
      }
      res.writeHead(200, { ...cached, 'content-type': type, 'content-length': String(stored.sizeBytes), 'x-content-type-options': 'nosniff' });
      if (head) res.end();
      else await pipeline(await storage.read(path), res);
    } catch (error) {
      services.logger.error({ err: error, requestId }, 'serving a stored image failed');
      if (!res.headersSent) refuse(error as Error);
      else res.destroy();
    }
    return true;
  };
}
