// POST /imports/{jobId}/start: queues an uploaded job for the import consumer.
import { startImport as start } from '../../domain/imports/jobs.ts';
import type { Handler } from '../../platform/http/types.ts';

export const startImport: Handler = async ({ auth, params, em, services }) => ({
  status: 202,
  data: await start(em, services.storage, auth.catalogId, params.jobId!),
});
