// Reading an import job's line errors: ordered by line number, filtered by type, one cursor per page.
import type { ImportErrorType, ImportLineError } from '../../generated/client.ts';
import type { Db } from '../../platform/db/sql.ts';
import { decodeLineCursor } from '../pagination.ts';
import { lineErrors } from './job-store.ts';
import { findJob } from './jobs.ts';

export async function listLineErrors(
  db: Db,
  catalogId: string,
  jobId: string,
  page: { limit: number; cursor?: string | undefined; errorType?: ImportErrorType | undefined },
): Promise<{ errors: ImportLineError[]; nextCursor: string | null }> {
  await findJob(db, catalogId, jobId);
  const afterLine = page.cursor === undefined ? 0 : decodeLineCursor(page.cursor);
  const { rows, nextCursor } = await lineErrors(db, jobId, { limit: page.limit, afterLine, errorType: page.errorType });
  return {
    errors: rows.map((r) => ({
      lineNumber: r.line_number,
      ...(r.external_id === null ? {} : { externalId: r.external_id }),
      errorType: r.error_type,
      errorMessage: r.error_message,
      rawLine: r.raw_line,
    })),
    nextCursor,
  };
}
