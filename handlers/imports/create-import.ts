// POST /imports: a new job and its signed upload address, or a queued job whose file the service fetches from its source (Idempotency-Key is honoured by the pipeline).
import { createImport as create } from '../../domain/imports/jobs.ts';
import { createSourceImport } from '../../domain/imports/source-jobs.ts';
import { validationError } from '../../platform/errors.ts';
import type { Handler } from '../handler.ts';

export const createImport: Handler<'createImport'> = async ({ auth, body, em, services }) => {
  const { fileSizeBytes, source, dryRun } = body;
  if (source !== undefined && fileSizeBytes === undefined) {
    return { status: 202, data: await createSourceImport(em, services.secrets, auth.catalogId, source, dryRun ?? false, services.config.outboundAllowPrivate) };
  }
  if (fileSizeBytes !== undefined && source === undefined) {
    return { status: 201, data: await create(em, services.storage, auth.catalogId, { fileSizeBytes, dryRun }) };
  }
  throw validationError([{ path: 'fileSizeBytes', message: 'give exactly one of fileSizeBytes (an upload) and source (an address)' }]);
};
