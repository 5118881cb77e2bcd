// Operational routes outside the API prefix: liveness, readiness, metrics and the API reference.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { retryOnConnectionLoss } from '../db/connections.ts';
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

// The contract's Readiness names each check `ok` or `error`: a dependency that refuses and one
// that does not answer in time are the same to a load balancer.
async function readiness(services: Services): Promise<{ database: Check; kafka: Check }> {
  // A pooled connection that Postgres ended meanwhile is not an outage: try once more on a new one.
  const database = timeout<Check>(retryOnConnectionLoss(() => query(services.orm.em, 'readiness.ping', 'SELECT 1')).then(() => 'ok', () => 'error'), 2000, 'error');
  const kafka = timeout<Check>(services.kafkaReachable().then((ok) => (ok ? 'ok' : 'error'), () => 'error'), 3000, 'error');
  return { database: await database, kafka: await kafka };
}

function send(res: ServerResponse, status: number, body: string | Buffer, contentType: string, headers: Record<string, string>) {
  res.writeHead(status, { ...headers, 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** The operational route for a request, if it is one; `serve` writes the whole response. */
export function matchOps(services: Services, method: string, path: string): { operationId: string; serve: (res: ServerResponse, headers: Record<string, string>) => Promise<void> } | undefined {
  const isRead = method === 'GET' || method === 'HEAD';
  if (!isRead) return undefined;
  if (path === '/healthz') return { operationId: 'getHealth', serve: async (res, headers) => sendJson(res, 200, { status: 'ok' }, headers) };
  if (path === '/readyz') {
    return {
      operationId: 'getReadiness',
      serve: async (res, headers) => {
        const checks = await readiness(services);
        // Serving needs Postgres only; Kafka is reported beside it (the outbox holds events meanwhile).
        const ready = checks.database === 'ok';
        sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready', checks }, headers);
      },
    };
  }
  if (path === '/metrics') {
    return {
      operationId: 'getMetrics',
      serve: async (res, headers) => send(res, 200, await services.metrics.registry.metrics(), services.metrics.registry.contentType, headers),
    };
  }
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
