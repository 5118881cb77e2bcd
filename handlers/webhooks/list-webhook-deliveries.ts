// GET /webhooks/{id}/deliveries: the delivery log, newest first, optionally one status.
import type { DeliveryStatus } from '../../generated/client.ts';
import { listDeliveries } from '../../domain/webhooks/deliveries.ts';
import type { Handler } from '../../platform/http/types.ts';
import { optionalString, pageLimit } from './rules.ts';

export const listWebhookDeliveries: Handler = async ({ auth, params, query, em }) => ({
  status: 200,
  data: await listDeliveries(em, auth.catalogId, params.id!, {
    status: optionalString(query.status) as DeliveryStatus | undefined,
    limit: pageLimit(query),
    cursor: optionalString(query.cursor),
  }),
});
