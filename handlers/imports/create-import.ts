// POST /imports: a new job and its signed upload address (Idempotency-Key is honoured by the pipeline).
import { createImport as create } from '../../domain/imports/jobs.ts';
import type { Handler } from '../handler.ts';

export const createImport: Handler<'createImport'> = async ({ auth, body, em, services }) => ({
  status: 201,
  data: await create(em, services.storage, auth.catalogId, body),
});
