// GET /events: the catalog's events, oldest first, filtered by type, resource and time.
import { listEvents as list } from '../../domain/events/event-log.ts';
import type { Handler } from '../handler.ts';

export const listEvents: Handler<'listEvents'> = async ({ auth, query, em }) => {
  const { limit, ...filters } = query;
  return { status: 200, data: await list(em, auth.catalogId, { ...filters, limit: limit ?? 50 }) };
};
