// GET /events/{eventId}: one of the catalog's events, exactly as it was delivered.
import { getEvent as get } from '../../domain/events/event-log.ts';
import type { Handler } from '../handler.ts';

export const getEvent: Handler<'getEvent'> = async ({ auth, params, em }) => ({
  status: 200,
  data: await get(em, auth.catalogId, params.eventId),
});
