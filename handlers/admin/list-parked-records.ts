// GET /admin/parked-records: the records the broker refused for good, every catalog's (scope admin).
import { listParked } from '../../domain/events/parked.ts';
import type { ParkedQuery } from '../../domain/events/parked.ts';
import type { Handler } from '../../platform/http/types.ts';

export const listParkedRecords: Handler = async ({ query, em }) => {
  const { limit, ...filters } = query as Partial<ParkedQuery>;
  return { status: 200, data: await listParked(em, { ...filters, limit: limit ?? 50 }) };
};
