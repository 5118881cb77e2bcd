// PUT to the local driver's signed upload address (contract: uploadImportFile), served outside the API prefix without an API key.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import type { TransformCallback } from 'node:stream';
import { jobForUpload, markUploaded } from '../../domain/imports/job-store.ts';
import { IMPORT_CONTENT_TYPE } from '../../domain/imports/jobs.ts';
import { mediaType } from '../../platform/http/body.ts';
import { httpError } from '../../platform/http/errors.ts';
import type { RequestRecord } from '../../platform/http/api-pipeline.ts';
import { decodedSegment } from '../../platform/http/request-validation.ts';
import { sendError, sendJson } from '../../platform/http/respond.ts';
import type { Services } from '../../platform/http/types.ts';
import { UPLOAD_ROUTE } from '../../platform/storage/local.ts';
import type { LocalStorage } from '../../platform/storage/local.ts';
import { isSafePath } from '../../platform/storage/storage.ts';

type ExtraRoute = (req: IncomingMessage, res: ServerResponse, url: URL, requestId: string, record: RequestRecord) => Promise<boolean>;

class BodyTooLarge extends Error {}

/** Counts bytes on the way to storage and stops the stream past the declared size. */
function sizeLimit(limit: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
      seen += chunk.length;
      done(seen > limit ? new BodyTooLarge() : null, chunk);
    },
  });
}

const tooLarge = (declared: number) => httpError('payload_too_large', `body exceeds the declared fileSizeBytes (${declared})`);

export function uploadRoute(services: Services): ExtraRoute {
  return async (req, res, url, requestId, record) => {
    if (!url.pathname.startsWith(UPLOAD_ROUTE)) return false;
    record.operationId = 'uploadImportFile';
    const headers: Record<string, string> = { 'x-request-id': requestId, 'cache-control': 'no-store' };
    // sendError settles the unread rest of the file first, or closes the connection after the answer.
    const refuse = (error: Error) => sendError(res, error, requestId, headers);
    try {
      if (req.method !== 'PUT') {
        const error = Object.assign(httpError('method_not_allowed', 'This path supports PUT only.'), { allow: 'PUT' });
        refuse(error);
        return true;
      }
      const { storage } = services;
      if (storage.driver !== 'local') {
        refuse(httpError('not_implemented', 'Uploads go to the presigned S3 address returned by createImport; this service runs the s3 storage driver.'));
        return true;
      }
      const segment = url.pathname.slice(UPLOAD_ROUTE.length);
      const path = decodedSegment(segment) ?? ''; // not valid percent-encoding: an invalid path below
      const details = [];
      if (segment.includes('/') || !isSafePath(path)) details.push({ path: 'storagePath', message: 'must be the storagePath of an import, percent-encoded as one segment' });
      const expiresText = url.searchParams.get('expires') ?? '';
      const signature = url.searchParams.get('signature') ?? '';
      if (!/^\d{1,12}$/.test(expiresText)) details.push({ path: 'query.expires', message: 'must be an integer (unix seconds)' });
      if (!/^[0-9a-f]{64}$/.test(signature)) details.push({ path: 'query.signature', message: 'must be 64 lowercase hex characters' });
      if (details.length > 0) {
        refuse(httpError('validation_error', 'The upload address is not valid; use uploadUrl exactly as returned.', details));
        return true;
      }
      const verdict = (storage as LocalStorage).verifyUpload(path, Number(expiresText), signature);
      if (verdict !== 'ok') {
        refuse(httpError('forbidden', 'upload address expired or signature invalid'));
        return true;
      }
      if (mediaType(req.headers['content-type']) !== IMPORT_CONTENT_TYPE) {
        refuse(httpError('unsupported_media_type', `The file must be sent as Content-Type: ${IMPORT_CONTENT_TYPE}.`));
        return true;
      }
      const db = services.orm.em.fork();
      const job = await jobForUpload(db, path);
      if (!job) {
        refuse(httpError('not_found', 'No import job has this storage path.'));
        return true;
      }
      record.catalogId = job.catalog_id;
      if (job.status !== 'awaiting_upload' || job.uploaded_at !== null) {
        refuse(httpError('conflict', job.uploaded_at !== null ? 'a file was already uploaded for this job' : `the job is ${job.status}, no longer awaiting_upload`));
        return true;
      }
      const declared = Number(job.file_size_bytes);
      const length = Number(req.headers['content-length']);
      if (Number.isFinite(length) && length > declared) {
        refuse(tooLarge(declared));
        return true;
      }
      const limited = sizeLimit(declared);
      // Its errors reach receive() through the pipeline; this keeps a late one from going uncaught.
      limited.on('error', () => undefined);
      // pipe() does not pass on a client that went away; without this the write would wait forever.
      const failed = (error: Error) => limited.destroy(error);
      const closed = () => { if (!req.readableEnded) limited.destroy(new Error('the client aborted the upload')); };
      req.once('error', failed);
      req.once('close', closed);
      let received;
      try {
        received = await (storage as LocalStorage).receive(path, req.pipe(limited));
      } catch (error) {
        if (!(error instanceof BodyTooLarge)) throw error;
        refuse(tooLarge(declared));
        return true;
      } finally {
        req.off('error', failed);
        req.off('close', closed);
      }
      // One upload per job: the first to record itself wins; the file only lands once it has.
      if (!(await markUploaded(db, job.id))) {
        await received.discard();
        refuse(httpError('conflict', 'a file was already uploaded for this job'));
        return true;
      }
      await received.commit();
      const size = received.sizeBytes;
      sendJson(res, 200, { success: true, data: { storagePath: path, sizeBytes: size } }, headers);
    } catch (error) {
      services.logger.error({ err: error, requestId }, 'upload failed');
      if (!res.headersSent) refuse(error as Error);
      else res.destroy();
    }
    return true;
  };
}
