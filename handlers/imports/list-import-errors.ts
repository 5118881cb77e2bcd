// GET /imports/{jobId}/errors: the job's line errors by line number, filtered by errorType, paginated.
import { listLineErrors } from '../../domain/imports/line-errors.ts';
import type { Handler } from '../handler.ts';

export const listImportErrors: Handler<'listImportErrors'> = async ({ auth, params, query, em }) => {
  const { limit, cursor, errorType } = query;
  return { status: 200, data: await listLineErrors(em, auth.catalogId, params.jobId, { limit: limit ?? 100, cursor, errorType }) };
};
