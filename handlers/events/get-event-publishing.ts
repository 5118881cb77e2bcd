// GET /events/publishing: how far the catalog's changes are published on Kafka, for readers who want to know they caught up.
import { publishingState } from '../../domain/events/publishing.ts';
import type { Handler } from '../handler.ts';

export const getEventPublishing: Handler<'getEventPublishing'> = async ({ auth, em }) => ({
  status: 200,
  data: await publishingState(em, auth.catalogId),
});
