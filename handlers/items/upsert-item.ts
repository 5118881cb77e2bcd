// POST /items/upsert: 201 when created, 200 when updated or unchanged, with the stored item.
import { getItem } from '../../domain/items/read.ts';
import { upsertOne } from '../../domain/items/single-upserts.ts';
import { itemView } from '../../domain/items/view.ts';
import { requestSource } from '../../domain/items/version-source.ts';
import { itemWithStoredUrls } from '../../domain/media/stored-urls.ts';
import type { Handler } from '../handler.ts';
import { linksOf } from '../media/links.ts';

export const upsertItem: Handler<'upsertItem'> = async (context) => {
  const { auth, body, services, requestId, headers } = context;
  // `context.em` is made when first read: only a group's first request and a lost race need one.
  const entry = await upsertOne(() => context.em, auth.catalogId, body, {
    mediaRefreshAgeHours: services.config.media.refreshAgeHours, source: requestSource(auth.keyId, requestId, headers),
  });
  if (entry.status === 'error') throw entry.error;
  // The write returns the stored item; it is read back only after a lost race.
  const item = await itemWithStoredUrls(entry.stored ? itemView(entry.stored) : await getItem(context.em, auth.catalogId, entry.item.externalSystem, entry.item.externalId), linksOf(services));
  return {
    status: entry.status === 'created' ? 201 : 200,
    data: { outcome: entry.status, serviceId: entry.serviceId, contentHash: entry.item.contentHash, item },
  };
};
