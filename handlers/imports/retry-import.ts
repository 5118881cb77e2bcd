// POST /imports/{jobId}/retry: a new queued job over only the failed lines of a finished one.
import { retryImport as retry } from '../../domain/imports/retry.ts';
import type { Handler } from '../../platform/http/types.ts';
import { storageFor } from '../../platform/storage/storage.ts';

export const retryImport: Handler = async ({ auth, params, em, services }) => ({
  status: 201,
  data: await retry(em, storageFor(services.config), auth.catalogId, params.jobId!),
});
