// GET /items/{externalSystem}/{externalId}: one item of the key's catalog.
import { getItem as readItem } from '../../domain/items/read.ts';
import { normalizeText } from '../../domain/items/payload.ts';
import { itemWithStoredUrls } from '../../domain/media/stored-urls.ts';
import type { Handler } from '../handler.ts';
import { linksOf } from '../media/links.ts';

export const getItem: Handler<'getItem'> = async ({ em, auth, params, services }) => ({
  status: 200,
  data: await itemWithStoredUrls(await readItem(em, auth.catalogId, normalizeText(params.externalSystem), normalizeText(params.externalId)), linksOf(services)),
});
