// GET /imports/{jobId}/errors: the job's line errors by line number, filtered by errorType, paginated.
import type { ImportErrorType } from '../../generated/client.ts';
import { listLineErrors } from '../../domain/imports/line-errors.ts';
import type { Handler } from '../../platform/http/types.ts';

export const listImportErrors: Handler = async ({ auth, params, query, em }) => {
  const { limit, cursor, errorType } = query as { limit?: number; cursor?: string; errorType?: ImportErrorType };
  return { status: 200, data: await listLineErrors(em, auth.catalogId, params.jobId!, { limit: limit ?? 100, cursor, errorType }) };
};
