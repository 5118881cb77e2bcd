// GET /imports: the catalog's import jobs, newest first, optionally of one status.
import type { ImportStatus } from '../../generated/client.ts';
import { listImports as list } from '../../domain/imports/jobs.ts';
import type { Handler } from '../../platform/http/types.ts';

export const listImports: Handler = async ({ auth, query, em }) => {
  const { limit, cursor, status } = query as { limit?: number; cursor?: string; status?: ImportStatus };
  return { status: 200, data: await list(em, auth.catalogId, { limit: limit ?? 50, cursor, status }) };
};
