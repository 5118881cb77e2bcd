// The operations listener every role serves on its own port: /metrics, /healthz and /readyz, nothing else.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { detached } from '../async-context.ts';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../metrics.ts';
import { httpError } from './errors.ts';
import { matchProbe, metricsRoute } from './ops.ts';
import type { OpsRoute, Readiness } from './ops.ts';
import { sendError } from './respond.ts';
import { answerClientError, newRequestId } from './transport.ts';

export interface OpsServerOptions {
  metrics: Metrics;
  readiness: () => Promise<Readiness>;
  logger: Logger;
}

export interface OpsListener {
  /** `http://host:port` of the listener. */
  readonly url: string;
  close(): Promise<void>;
}

function route(options: OpsServerOptions, path: string): OpsRoute | undefined {
  return path === '/metrics' ? metricsRoute(options.metrics.registry) : matchProbe(options.readiness, path);
}

export function createOpsServer(options: OpsServerOptions): Server {
  const { metrics, logger } = options;
  // Scrapes and probes are counted like API requests (operation getMetrics, getReadiness, ...) but
  // not logged: a scraper every few seconds would drown the access log.
  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 30_000, requireHostHeader: false }, (req, res) => detached(async () => {
    const started = process.hrtime.bigint();
    const requestId = newRequestId();
    const headers = { 'x-request-id': requestId };
    let operation = 'unmatched';
    res.on('finish', () => {
      metrics.requests.inc({ method: req.method, operation, status: String(res.statusCode) });
      metrics.duration.observe({ method: req.method, operation }, Number(process.hrtime.bigint() - started) / 1e9);
    });
    req.resume();
    try {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      const found = route(options, path);
      if (!found) {
        sendError(res, httpError('not_found', `No route ${req.method} ${path} on the operations port: it serves /metrics, /healthz and /readyz.`), requestId, headers);
        return;
      }
      operation = found.operationId;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendError(res, Object.assign(httpError('method_not_allowed', `${req.method} is not allowed on ${path}; allowed: GET`), { allow: 'GET, HEAD' }), requestId, headers);
        return;
      }
      await found.serve(res, headers);
    } catch (error) {
      logger.error({ err: error, requestId }, 'operations request failed');
      if (!res.headersSent) sendError(res, error, requestId, headers);
      else res.destroy();
    }
  }));
  server.on('clientError', answerClientError(logger));
  return server;
}

/** Listens on `port` (0: any free one) and `host`; resolves once bound. */
export async function startOpsServer(options: OpsServerOptions, port: number, host: string): Promise<OpsListener> {
  const server = createOpsServer(options);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const close = () => new Promise<void>((resolve) => {
    // Scrapes and probes are short: idle keep-alives go at once, a request in flight is cut.
    server.close(() => resolve());
    server.closeAllConnections();
  });
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`, close };
}
