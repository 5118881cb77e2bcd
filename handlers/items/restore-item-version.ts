// POST /items/{externalSystem}/{externalId}/versions/{version}/restore: an upsert of the version's item, answered as upsertItem answers.
import { getItem } from '../../domain/items/read.ts';
import { normalizeText } from '../../domain/items/payload.ts';
import { restoreVersion } from '../../domain/items/restore.ts';
import { requestSource } from '../../domain/items/version-source.ts';
import { itemView } from '../../domain/items/view.ts';
import { itemWithStoredUrls } from '../../domain/media/stored-urls.ts';
import type { Handler } from '../handler.ts';
import { linksOf } from '../media/links.ts';

export const restoreItemVersion: Handler<'restoreItemVersion'> = async (context) => {
  const { auth, actor, params, services, requestId, headers } = context;
  const { version } = params;
  const externalSystem = normalizeText(params.externalSystem);
  const externalId = normalizeText(params.externalId);
  const entry = await restoreVersion(context.em, auth.catalogId, externalSystem, externalId, version, {
    retentionDays: services.config.itemVersionRetentionDays,
    mediaRefreshAgeHours: services.config.media.refreshAgeHours,
    source: requestSource(auth.keyId, requestId, headers, version),
  }, actor);
  const item = await itemWithStoredUrls(entry.stored ? itemView(entry.stored) : await getItem(context.em, auth.catalogId, entry.item.externalSystem, entry.item.externalId), linksOf(services));
  return {
    status: entry.status === 'created' ? 201 : 200,
    data: { outcome: entry.status, serviceId: entry.serviceId, contentHash: entry.item.contentHash, item },
  };
};
