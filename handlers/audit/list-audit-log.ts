// GET /audit-log: the catalog's administrative actions, newest first, with who made them and from where (scope audit:read).
import { listAuditLog as list } from '../../domain/audit/audit-log.ts';
import type { Handler } from '../handler.ts';

export const listAuditLog: Handler<'listAuditLog'> = async ({ auth, query, em }) => {
  const { limit, cursor, ...filter } = query;
  return { status: 200, data: await list(em, auth.catalogId, filter, { limit: limit ?? 50, cursor }) };
};
