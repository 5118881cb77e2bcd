// Serves one request under the API prefix: its steps in order, each in api-steps.ts or api-invoke.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ProductError } from '../errors.ts';
import { invokeHandler } from './api-invoke.ts';
import {
  admitCaller, authorize, decodePathParameters, describeRequest, identifyCaller, readRequestBody, routeRequest, validateRequest,
} from './api-steps.ts';
import { rateLimitHeaders, sendError, sendResult } from './respond.ts';
import type { ServedHandler, Services } from './types.ts';

export interface RequestRecord {
  operationId: string | undefined;
  catalogId: string | undefined;
}

export async function serveApi(
  services: Services,
  handlers: ReadonlyMap<string, ServedHandler>,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  requestId: string,
  record: RequestRecord,
): Promise<void> {
  // Every answer, errors included, carries these; the rate-limit headers once the request is counted.
  const headers: Record<string, string> = { 'x-request-id': requestId, 'cache-control': 'no-store' };
  try {
    const caller = await identifyCaller(services, req);
    Object.assign(headers, rateLimitHeaders(caller.rateLimit));
    record.catalogId = caller.auth?.catalogId;
    admitCaller(caller);
    const request = describeRequest(req, url);
    const operation = routeRequest(services, request);
    record.operationId = operation.operationId;
    authorize(operation, caller.auth);
    const pathParams = decodePathParameters(operation, request);
    const body = await readRequestBody(req, operation);
    const input = validateRequest(services, operation, request, pathParams, body);
    const handler = handlers.get(operation.operationId)!;
    const result = await invokeHandler({ services, handler, operation, req, path: request.path, requestId, auth: caller.auth, clientAddress: caller.address }, input);
    await sendResult(res, result, headers);
  } catch (error) {
    answerError(services, res, error, requestId, headers);
  }
}

/** A product error is the client's answer; anything else is logged first. A failure after the answer began ends the connection. */
function answerError(services: Services, res: ServerResponse, error: unknown, requestId: string, headers: Record<string, string>): void {
  if (!(error instanceof ProductError)) services.logger.error({ err: error, requestId }, 'request failed');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendError(res, error, requestId, headers);
}
