// GET /imports/{jobId}/failed-lines: the failed lines of an ended job, byte for byte, to correct and import again.
import { failedLinesFile } from '../../domain/imports/results.ts';
import type { Handler } from '../handler.ts';

export const getImportFailedLines: Handler<'getImportFailedLines'> = async ({ auth, params, em, services }) => ({
  status: 200,
  contentType: 'application/x-ndjson',
  headers: { 'content-disposition': 'attachment; filename="failed-lines.jsonl"' },
  stream: await failedLinesFile(em, services.storage, auth.catalogId, params.jobId),
});
