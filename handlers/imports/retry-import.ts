// POST /imports/{jobId}/retry: a new queued job over only the failed lines of a finished one.
import { retryImport as retry } from '../../domain/imports/retry.ts';
import type { Handler } from '../handler.ts';

export const retryImport: Handler<'retryImport'> = async ({ auth, actor, params, em, services }) => ({
  status: 201,
  data: await retry(em, services.storage, auth.catalogId, params.jobId, actor),
});
