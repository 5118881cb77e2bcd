// GET /items: a page of items in update order, with filters and a cursor.
import { listItems as readItems } from '../../domain/items/read.ts';
import { itemWithStoredUrls } from '../../domain/media/stored-urls.ts';
import type { Handler } from '../handler.ts';
import { linksOf } from '../media/links.ts';

export const listItems: Handler<'listItems'> = async ({ em, auth, query, services }) => {
  const { limit, cursor, ...filters } = query;
  const page = await readItems(em, auth.catalogId, filters, { limit: limit ?? 50, cursor });
  const links = linksOf(services);
  return { status: 200, data: { ...page, items: await Promise.all(page.items.map((item) => itemWithStoredUrls(item, links))) } };
};
