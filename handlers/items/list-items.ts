// GET /items: a page of items in update order, with filters and a cursor.
import { listItems as readItems } from '../../domain/items/read.ts';
import type { ItemFilters } from '../../domain/items/read.ts';
import type { Handler } from '../../platform/http/types.ts';

export const listItems: Handler = async ({ em, auth, query }) => {
  const { limit, cursor, ...filters } = query as ItemFilters & { limit?: number; cursor?: string };
  return { status: 200, data: await readItems(em, auth.catalogId, filters, { limit: limit ?? 50, cursor }) };
};
