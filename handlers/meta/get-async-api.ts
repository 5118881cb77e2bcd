// GET /asyncapi.json: the AsyncAPI document of the Kafka topics, with this deployment's brokers, topic names and topic configuration.
import type { Contract } from '../../platform/http/contract.ts';
import { servedAsyncApi } from '../../platform/http/served-asyncapi.ts';
import type { Handler } from '../handler.ts';

// Made once per contract: neither it nor the deployment changes while the process runs.
const served = new WeakMap<Contract, string>();

export const getAsyncApi: Handler<'getAsyncApi'> = async ({ services }) => {
  let json = served.get(services.contract);
  if (json === undefined) served.set(services.contract, json = servedAsyncApi(services.contract.asyncApi, services.config));
  return { status: 200, raw: json, contentType: 'application/json; charset=utf-8', headers: { 'cache-control': 'public, max-age=300' } };
};
