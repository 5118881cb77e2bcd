// GET /admin/console-sessions: every console link with its session's state, newest first (scope admin).
import { listConsoleSessions as list } from '../../domain/access/console-links.ts';
import type { Handler } from '../handler.ts';

export const listConsoleSessions: Handler<'listConsoleSessions'> = async ({ query, em }) => ({
  status: 200,
  data: await list(em, { catalog: query.catalog, limit: query.limit ?? 50, cursor: query.cursor }),
});
