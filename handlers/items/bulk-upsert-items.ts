// POST /items/bulk-upsert: 200 with one result per element, in order, even when some fail.
import { upsertItems } from '../../domain/items/upsert.ts';
import { requestSource } from '../../domain/items/version-source.ts';
import type { Handler } from '../../platform/http/types.ts';

export const bulkUpsertItems: Handler = async ({ em, auth, body, services, requestId, headers }) => {
  const { items } = body as { items: unknown[] };
  const source = requestSource(auth.keyId, requestId, headers);
  const entries = await upsertItems(em, auth.catalogId, items, {
    pathPrefix: (index) => `items.${index}.`, mediaRefreshAgeHours: services.config.media.refreshAgeHours, sourceOf: () => source,
  });
  const summary = { created: 0, updated: 0, unchanged: 0, failed: 0 };
  const results = entries.map((entry) => {
    if (entry.status === 'error') {
      summary.failed += 1;
      return {
        index: entry.index,
        externalId: entry.externalId,
        status: 'error',
        error: entry.error.message,
        errorCode: entry.error.code,
        ...(entry.error.details ? { details: entry.error.details } : {}),
      };
    }
    summary[entry.status] += 1;
    return {
      index: entry.index,
      externalId: entry.item.externalId,
      status: entry.status,
      serviceId: entry.serviceId,
      contentHash: entry.item.contentHash,
    };
  });
  return { status: 200, data: { results, summary } };
};
