// POST /imports: a new job and its signed upload address, or a queued job whose file the service fetches from its source (Idempotency-Key is honoured by the pipeline).
import type { CreateImportRequest } from '../../generated/client.ts';
import { createImport as create } from '../../domain/imports/jobs.ts';
import { createSourceImport } from '../../domain/imports/source-jobs.ts';
import { validationError } from '../../platform/errors.ts';
import type { Handler } from '../../platform/http/types.ts';

export const createImport: Handler = async ({ auth, body, em, services }) => {
  const { fileSizeBytes, source, dryRun } = body as CreateImportRequest;
  if ((fileSizeBytes === undefined) === (source === undefined)) {
    throw validationError([{ path: 'fileSizeBytes', message: 'give exactly one of fileSizeBytes (an upload) and source (an address)' }]);
  }
  if (source !== undefined) {
    return { status: 202, data: await createSourceImport(em, auth.catalogId, source, dryRun ?? false, services.config.outboundAllowPrivate) };
  }
  return { status: 201, data: await create(em, services.storage, auth.catalogId, { fileSizeBytes: fileSizeBytes!, dryRun }) };
};
