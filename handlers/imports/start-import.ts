// POST /imports/{jobId}/start: queues an uploaded job for the import consumer.
import { startImport as start } from '../../domain/imports/jobs.ts';
import type { Handler } from '../../platform/http/types.ts';
import { storageFor } from '../../platform/storage/storage.ts';

export const startImport: Handler = async ({ auth, params, em, services }) => ({
  status: 202,
  data: await start(em, storageFor(services.config), auth.catalogId, params.jobId!),
});
