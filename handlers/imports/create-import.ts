// POST /imports: a new job and its signed upload address (Idempotency-Key is honoured by the pipeline).
import type { CreateImportRequest } from '../../generated/client.ts';
import { createImport as create } from '../../domain/imports/jobs.ts';
import type { Handler } from '../../platform/http/types.ts';

export const createImport: Handler = async ({ auth, body, em, services }) => {
  const input = body as CreateImportRequest;
  return { status: 201, data: await create(em, services.storage, auth.catalogId, input) };
};
