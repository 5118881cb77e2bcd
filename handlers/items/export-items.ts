// GET /items/export: the whole catalog as JSONL in the upsert payload shape, streamed.
import { Readable } from 'node:stream';
import { exportItems as streamItems } from '../../domain/items/read.ts';
import type { Handler } from '../handler.ts';

export const exportItems: Handler<'exportItems'> = async ({ em, auth, query }) => ({
  status: 200,
  contentType: 'application/x-ndjson; charset=utf-8',
  headers: { 'content-disposition': 'attachment; filename="catalog-export.jsonl"' },
  stream: Readable.from(streamItems(em, auth.catalogId, { updatedSince: query.updatedSince })),
});
