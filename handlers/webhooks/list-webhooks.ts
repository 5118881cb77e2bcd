// GET /webhooks: the catalog's webhooks, oldest first, without their secrets.
import { listWebhooks as list } from '../../domain/webhooks/subscriptions.ts';
import type { Handler } from '../../platform/http/types.ts';
import { optionalString, pageLimit } from './rules.ts';

export const listWebhooks: Handler = async ({ auth, query, em }) => ({
  status: 200,
  data: await list(em, auth.catalogId, { limit: pageLimit(query), cursor: optionalString(query.cursor) }),
});
