// GET /events/{eventId}: one of the catalog's events, exactly as it was delivered.
import { getEvent as get } from '../../domain/events/event-log.ts';
import type { Handler } from '../../platform/http/types.ts';

export const getEvent: Handler = async ({ auth, params, em }) => ({
  status: 200,
  data: await get(em, auth.catalogId, params.eventId!),
});
