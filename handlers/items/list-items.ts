// GET /items: a page of items in update order, with filters and a cursor.
import { listItems as readItems } from '../../domain/items/read.ts';
import type { ItemFilters } from '../../domain/items/read.ts';
import { itemWithStoredUrls } from '../../domain/media/stored-urls.ts';
import type { Handler } from '../../platform/http/types.ts';
import { linksOf } from '../media/links.ts';

export const listItems: Handler = async ({ em, auth, query, services }) => {
  const { limit, cursor, ...filters } = query as ItemFilters & { limit?: number; cursor?: string };
  const page = await readItems(em, auth.catalogId, filters, { limit: limit ?? 50, cursor });
  const links = linksOf(services);
  return { status: 200, data: { ...page, items: await Promise.all(page.items.map((item) => itemWithStoredUrls(item, links))) } };
};
