// POST /items/bulk-upsert: 200 with one result per element, in order, even when some fail.
import type { BulkUpsertItemResult } from '../../generated/client.ts';
import { upsertItems } from '../../domain/items/upsert.ts';
import { requestSource } from '../../domain/items/version-source.ts';
import type { ErrorCode } from '../../platform/errors.ts';
import type { Handler } from '../handler.ts';

/** The contract names three codes for one element's failure; the write makes no other, and any would be an `error`. */
const elementCode = (code: ErrorCode): NonNullable<BulkUpsertItemResult['errorCode']> =>
  (code === 'conflict' || code === 'validation_error' ? code : 'error');

export const bulkUpsertItems: Handler<'bulkUpsertItems'> = async ({ em, auth, body, services, requestId, headers }) => {
  const source = requestSource(auth.keyId, requestId, headers);
  const entries = await upsertItems(em, auth.catalogId, body.items, {
    pathPrefix: (index) => `items.${index}.`, mediaRefreshAgeHours: services.config.media.refreshAgeHours, sourceOf: () => source,
  });
  const summary = { created: 0, updated: 0, unchanged: 0, failed: 0 };
  const results = entries.map((entry): BulkUpsertItemResult => {
    if (entry.status === 'error') {
      summary.failed += 1;
      return {
        index: entry.index,
        externalId: entry.externalId,
        status: 'error',
        error: entry.error.message,
        errorCode: elementCode(entry.error.code),
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
