// GET /openapi.json: the contract itself, the authoritative description of the interface.
import type { Handler } from '../../platform/http/types.ts';

export const getOpenApi: Handler = async ({ services }) => ({
  status: 200,
  raw: services.contract.documentJson,
  contentType: 'application/json; charset=utf-8',
  headers: { 'cache-control': 'public, max-age=300' },
});
