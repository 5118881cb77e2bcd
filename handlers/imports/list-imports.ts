// GET /imports: the catalog's import jobs, newest first, optionally of one status.
import { listImports as list } from '../../domain/imports/jobs.ts';
import type { Handler } from '../handler.ts';

export const listImports: Handler<'listImports'> = async ({ auth, query, em }) => {
  const { limit, cursor, status } = query;
  return { status: 200, data: await list(em, auth.catalogId, { limit: limit ?? 50, cursor, status }) };
};
