// GET /admin/parked-records: the records the broker refused for good, every catalog's (scope admin).
import { listParked } from '../../domain/events/parked.ts';
import type { Handler } from '../handler.ts';

export const listParkedRecords: Handler<'listParkedRecords'> = async ({ query, em }) => {
  const { limit, ...filters } = query;
  return { status: 200, data: await listParked(em, { ...filters, limit: limit ?? 50 }) };
};
