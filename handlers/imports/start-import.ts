// POST /imports/{jobId}/start: queues an uploaded job for the import consumer.
import { startImport as start } from '../../domain/imports/jobs.ts';
import type { Handler } from '../handler.ts';

export const startImport: Handler<'startImport'> = async ({ auth, params, em, services }) => ({
  status: 202,
  data: await start(em, services.storage, auth.catalogId, params.jobId),
});
