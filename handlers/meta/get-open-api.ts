// GET /openapi.json: the contract itself, the authoritative description of the interface, with this deployment's servers.
import { servedDocument } from '../../platform/http/contract.ts';
import type { Contract } from '../../platform/http/contract.ts';
import type { Handler } from '../handler.ts';

// Made once per contract: neither it nor the deployment changes while the process runs.
const served = new WeakMap<Contract, string>();

export const getOpenApi: Handler<'getOpenApi'> = async ({ services }) => {
  let json = served.get(services.contract);
  if (json === undefined) served.set(services.contract, json = servedDocument(services.contract.document, services.config));
  return { status: 200, raw: json, contentType: 'application/json; charset=utf-8', headers: { 'cache-control': 'public, max-age=300' } };
};
