// Operational routes outside the API prefix: liveness, readiness (cached), metrics and the API reference.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { retryOnConnectionLoss } from '../db/connections.ts';
import type { Registry } from 'prom-client';
import { detached } from '../async-context.ts';
import { query } from '../db/sql.ts';
import { sendJson } from './respond.ts';
import { API_PREFIX } from './contract.ts';
import type { Services } from './types.ts';

const swaggerDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

// Only these files of swagger-ui-dist are served; nothing else of node_modules is reachable.
const DOC_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Catalog Service API reference</title>
  <link rel="icon" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <style>.asyncapi-link { font-family: sans-serif; margin: 12px 20px 0; }</style>
</head>
<body>
  <p class="asyncapi-link"><a href="${API_PREFIX}/asyncapi.json">AsyncAPI document of the Kafka topics</a>
    (events, the item changelog and the internal work queues)</p>
  <div id="reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/docs.js"></script>
</body>
</html>
`;

const DOCS_SCRIPT = `window.ui = SwaggerUIBundle({
  url: '${API_PREFIX}/openapi.json',
  dom_id: '#reference',
  deepLinking: true,
  tryItOutEnabled: false,
  persistAuthorization: false,
});
`;

const timeout = <T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> =>
  Promise.race([promise, new Promise<T>((resolve) => setTimeout(() => resolve(fallback), ms).unref())]);

type Check = 'ok' | 'error';
export type Readiness = { database: Check; kafka: Check };
export type ReadinessDependencies = Pick<Services, 'orm' | 'kafkaReachable'>;

// The contract's Readiness names each check `ok` or `error`: a dependency that refuses and one
// that does not answer in time are the same to a load balancer.
async function readiness(services: ReadinessDependencies): Promise<Readiness> {
  // A pooled connection that Postgres ended meanwhile is not an outage: try once more on a new one.
  const database = timeout<Check>(retryOnConnectionLoss(() => query(services.orm.em, 'readiness.ping', 'SELECT 1')).then(() => 'ok', () => 'error'), 2000, 'error');
  const kafka = timeout<Check>(services.kafkaReachable().then((ok) => (ok ? 'ok' : 'error'), () => 'error'), 3000, 'error');
  return { database: await database, kafka: await kafka };
}

/**
 * The dependency checks of the process, shared by both ports: probes arriving while a check runs,
 * or within `ttlMs` of its answer, get that answer, so a flood of /readyz costs Postgres nothing.
 */
export function cachedReadiness(dependencies: ReadinessDependencies, ttlMs = 1000): () => Promise<Readiness> {
  let last: { answer: Promise<Readiness>; settledAt: number | undefined } | undefined;
  return () => {
    if (last && (last.settledAt === undefined || performance.now() - last.settledAt < ttlMs)) return last.answer;
    // Shared by every probe of the next second: started in the root context, no caller's (docs/design.md, "Async context").
    const current: { answer: Promise<Readiness>; settledAt: number | undefined } = { answer: detached(() => readiness(dependencies)), settledAt: undefined };
    void current.answer.finally(() => { current.settledAt = performance.now(); });
    last = current;
    return current.answer;
  };
}

function send(res: ServerResponse, status: number, body: string | Buffer, contentType: string, headers: Record<string, string>) {
  res.writeHead(status, { ...headers, 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

export interface OpsRoute {
  operationId: string;
  serve: (res: ServerResponse, headers: Record<string, string>) => Promise<void>;
}

/** /healthz and /readyz, served on both the API port and the operations port. */
export function matchProbe(probe: () => Promise<Readiness>, path: string): OpsRoute | undefined {
  if (path === '/healthz') return { operationId: 'getHealth', serve: async (res, headers) => sendJson(res, 200, { status: 'ok' }, headers) };
  if (path === '/readyz') {
    return {
      operationId: 'getReadiness',
      serve: async (res, headers) => {
        const checks = await probe();
        // Serving needs Postgres only; Kafka is reported beside it (the outbox holds events meanwhile).
        const ready = checks.database === 'ok';
        sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready', checks }, headers);
      },
    };
  }
  return undefined;
}

/** /metrics: only on the operations port, which is private (loopback unless OPS_HOST says otherwise). */
export function metricsRoute(registry: Registry): OpsRoute {
  return { operationId: 'getMetrics', serve: async (res, headers) => send(res, 200, await registry.metrics(), registry.contentType, headers) };
}

/** The operational route of the API port for a request, if it is one; `serve` writes the whole response. */
export function matchOps(services: Services, method: string, path: string): OpsRoute | undefined {
  const isRead = method === 'GET' || method === 'HEAD';
  if (!isRead) return undefined;
  const probe = matchProbe(services.readiness, path);
  if (probe) return probe;
  if (path === '/docs' || path === '/docs/') {
    return { operationId: 'getDocs', serve: async (res, headers) => send(res, 200, DOCS_PAGE, 'text/html; charset=utf-8', headers) };
  }
  if (path === '/docs/assets/docs.js') {
    return {
      operationId: 'getDocs',
      serve: async (res, headers) => send(res, 200, DOCS_SCRIPT, 'text/javascript; charset=utf-8', { ...headers, 'cache-control': 'public, max-age=3600' }),
    };
  }
  const asset = path.startsWith('/docs/assets/') ? path.slice('/docs/assets/'.length) : '';
  const assetType = DOC_ASSETS[asset];
  if (assetType) {
    return {
      operationId: 'getDocs',
      serve: async (res, headers) => send(res, 200, await readFile(join(swaggerDir, asset)), assetType, { ...headers, 'cache-control': 'public, max-age=86400' }),
    };
  }
  return undefined;
}
