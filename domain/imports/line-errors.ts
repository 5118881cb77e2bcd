// Reading an import job's line errors: ordered by line number, filtered by type, one cursor per page.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ImportErrorType, ImportLineError } from '../../generated/client.ts';
import { validationError } from '../../platform/errors.ts';
import { findJob } from './jobs.ts';

interface ErrorRow {
  line_number: number;
  external_id: string | null;
  error_type: ImportErrorType;
  error_message: string;
  raw_line: string;
}

const encode = (lineNumber: number) => Buffer.from(JSON.stringify({ l: lineNumber })).toString('base64url');

function decode(cursor: string): number {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { l?: unknown };
    if (Number.isInteger(parsed.l) && (parsed.l as number) >= 0) return parsed.l as number;
  } catch {
    // Falls through to the 400 below.
  }
  throw validationError([{ path: 'query.cursor', message: 'is not a cursor returned by this list' }]);
}

export async function listLineErrors(
  em: EntityManager,
  catalogId: string,
  jobId: string,
  page: { limit: number; cursor?: string | undefined; errorType?: ImportErrorType | undefined },
): Promise<{ errors: ImportLineError[]; nextCursor: string | null }> {
  await findJob(em, catalogId, jobId);
  const after = page.cursor === undefined ? 0 : decode(page.cursor);
  const params: unknown[] = [jobId, after];
  let where = 'job_id = ? AND line_number > ?';
  if (page.errorType) {
    where += ' AND error_type = ?';
    params.push(page.errorType);
  }
  const rows = await em.execute<ErrorRow[]>(
    `SELECT line_number, external_id, error_type, error_message, raw_line FROM import_errors WHERE ${where} ORDER BY line_number LIMIT ${page.limit + 1}`,
    params,
  );
  const shown = rows.slice(0, page.limit);
  return {
    errors: shown.map((r) => ({
      lineNumber: r.line_number,
      ...(r.external_id === null ? {} : { externalId: r.external_id }),
      errorType: r.error_type,
      errorMessage: r.error_message,
      rawLine: r.raw_line,
    })),
    nextCursor: rows.length > page.limit ? encode(shown.at(-1)!.line_number) : null,
  };
}
