// The HTTP server: request ids, access logs and metrics around the API and operational routes.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { detached } from '../async-context.ts';
import { failSpan, inSpan, tracingOn } from '../tracing.ts';
import { API_PREFIX } from './contract.ts';
import { createCors } from './cors.ts';
import type { Cors } from './cors.ts';
import { httpError } from './errors.ts';
import { serveApi } from './api-pipeline.ts';
import type { RequestRecord } from './api-pipeline.ts';
import { consoleRoutes } from './console.ts';
import { matchOps } from './ops.ts';
import { sendError } from './respond.ts';
import { answerClientError, newRequestId } from './transport.ts';
import type { ServedHandler, Services } from './types.ts';

// An incoming X-Request-Id is kept when it is a sane token, so callers can correlate.
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : newRequestId();
}

export interface HttpServerOptions {
  services: Services;
  handlers: ReadonlyMap<string, ServedHandler>;
  /** Routes served outside the API prefix besides the operational ones (e.g. signed uploads). */
  extraRoutes?: (req: IncomingMessage, res: ServerResponse, url: URL, requestId: string, record: RequestRecord) => Promise<boolean>;
}

export function createHttpServer(options: HttpServerOptions): Server {
  const { services } = options;
  const cors = createCors(services.config.corsAllowedOrigins);
  const serveConsole = consoleRoutes(services.config);
  // requireHostHeader: Node's own 400 for a missing Host is bare; handle() answers it in the envelope.
  // Each request starts in the root context: on Deno a runtime-dispatched request otherwise runs in
  // whatever context the last dynamic import was made in (platform/async-context.ts).
  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 300_000, requireHostHeader: false }, (req, res) => detached(() => {
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(req);
    const record: RequestRecord = { operationId: undefined, catalogId: undefined };
    cors.expose(req, res);
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const operation = record.operationId ?? 'unmatched';
      services.metrics.requests.inc({ method: req.method, operation, status: String(res.statusCode) });
      services.metrics.duration.observe({ method: req.method, operation }, seconds);
      services.logger.info({
        requestId, method: req.method, route: operation, status: res.statusCode,
        latencyMs: Math.round(seconds * 1e4) / 10, catalogId: record.catalogId,
      }, 'request');
    });
    traced(req, res, record, () => handle(options, cors, serveConsole, req, res, requestId, record)).catch((error) => {
      services.logger.error({ err: error, requestId }, 'unhandled request failure');
      if (!res.headersSent) sendError(res, error, requestId, { 'x-request-id': requestId });
      else res.destroy();
    });
  }));
  // What the HTTP parser refuses never reaches the handler above; answer it in the envelope too.
  server.on('clientError', answerClientError(services.logger));
  return server;
}

/**
 * The request's server span, named by its operationId, continuing an incoming `traceparent`;
 * it ends with the response. Traces off, just the request.
 */
function traced(req: IncomingMessage, res: ServerResponse, record: RequestRecord, work: () => Promise<void>): Promise<void> {
  if (!tracingOn()) return work();
  const incoming = req.headers.traceparent;
  return inSpan(`HTTP ${req.method}`, { kind: 'server', parent: typeof incoming === 'string' ? incoming : null, attributes: { 'http.request.method': req.method } }, async (span) => {
    await work();
    if (!res.writableFinished && !res.destroyed) await new Promise((done) => res.once('close', done));
    span?.updateName(record.operationId ?? 'unmatched');
    span?.setAttribute('http.response.status_code', res.statusCode);
    if (record.catalogId) span?.setAttribute('catalog.id', record.catalogId);
    if (res.statusCode >= 500) failSpan(span, `answered ${res.statusCode}`);
  });
}

type ConsoleRoutes = ReturnType<typeof consoleRoutes>;

async function handle(options: HttpServerOptions, cors: Cors, serveConsole: ConsoleRoutes, req: IncomingMessage, res: ServerResponse, requestId: string, record: RequestRecord) {
  if (req.httpVersion === '1.1' && req.headers.host === undefined) {
    // RFC 9112 §3.2: a server must answer 400 to an HTTP/1.1 request without Host.
    sendError(res, httpError('bad_request', 'An HTTP/1.1 request must carry a Host header.'), requestId, { 'x-request-id': requestId });
    return;
  }
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://localhost');
  } catch {
    sendError(res, httpError('not_found', 'The request target is not a valid path.'), requestId, { 'x-request-id': requestId });
    return;
  }
  if (cors.isPreflight(req)) {
    record.operationId = 'preflight';
    req.resume();
    const origin = req.headers.origin;
    if (cors.allows(origin)) cors.answerPreflight(res, origin, { 'x-request-id': requestId });
    else sendError(res, httpError('forbidden', `Browsers on ${origin ?? 'no origin'} may not call this service (CORS_ALLOWED_ORIGINS).`), requestId, { 'x-request-id': requestId });
    return;
  }
  if (url.pathname === API_PREFIX || url.pathname.startsWith(`${API_PREFIX}/`)) {
    await serveApi(options.services, options.handlers, req, res, url, requestId, record);
    return;
  }
  const headers = { 'x-request-id': requestId };
  const ops = matchOps(options.services, req.method ?? 'GET', url.pathname);
  if (ops) {
    record.operationId = ops.operationId;
    req.resume();
    await ops.serve(res, headers);
    return;
  }
  if (url.pathname === '/console' || url.pathname.startsWith('/console/')) {
    record.operationId = 'getConsole';
    req.resume();
    if (await serveConsole(req, res, url.pathname, headers)) return;
  }
  if (!(await options.extraRoutes?.(req, res, url, requestId, record))) {
    req.resume();
    sendError(res, httpError('not_found', `No route ${req.method} ${url.pathname}. The API lives under ${API_PREFIX}.`), requestId, headers);
  }
}

/** Stops accepting connections, lets in-flight requests finish, then closes idle keep-alives. */
export async function closeHttpServer(server: Server, graceMs = 10_000): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  timer.unref();
  await closed;
  clearTimeout(timer);
}
