// GET /imports/{jobId}: the job with its status, progress and counts (what clients poll).
import { getImport as get } from '../../domain/imports/jobs.ts';
import type { Handler } from '../handler.ts';

export const getImport: Handler<'getImport'> = async ({ auth, params, em }) => ({
  status: 200,
  data: await get(em, auth.catalogId, params.jobId),
});
