// GET /imports/{jobId}/results: every line's outcome of an ended job, streamed as JSONL.
import { Readable } from 'node:stream';
import { resultsFile } from '../../domain/imports/results.ts';
import type { Handler } from '../handler.ts';

export const getImportResults: Handler<'getImportResults'> = async ({ auth, params, em, services }) => ({
  status: 200,
  contentType: 'application/x-ndjson; charset=utf-8',
  headers: { 'content-disposition': 'attachment; filename="import-results.jsonl"' },
  stream: Readable.from(await resultsFile(em, services.storage, auth.catalogId, params.jobId)),
});
