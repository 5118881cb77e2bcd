// GET /asyncapi.json: the AsyncAPI document of the Kafka topics, loaded with the contract at start-up.
import type { Handler } from '../../platform/http/types.ts';

export const getAsyncApi: Handler = async ({ services }) => ({
  status: 200,
  raw: services.contract.asyncApiJson,
  contentType: 'application/json; charset=utf-8',
  headers: { 'cache-control': 'public, max-age=300' },
});
