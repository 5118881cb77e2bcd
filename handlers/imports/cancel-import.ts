// POST /imports/{jobId}/cancel: stops a job that has not finished; emits import.failed.
import { cancelImport as cancel } from '../../domain/imports/jobs.ts';
import type { Handler } from '../handler.ts';

export const cancelImport: Handler<'cancelImport'> = async ({ auth, actor, params, em }) => ({
  status: 200,
  data: await cancel(em, auth.catalogId, params.jobId, actor),
});
