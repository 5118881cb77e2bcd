// The browser console's files (built into console/dist by scripts/build-console.ts), served under
// /console with a Content Security Policy that allows only this origin (docs/design.md, "Console").
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config/config.ts';

const DIST = fileURLToPath(new URL('../../console/dist/', import.meta.url));
const TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', svg: 'image/svg+xml' };
const ASSET = /^\/console\/assets\/([A-Za-z0-9_-]+\.(js|css|svg))$/;

interface Manifest { script: string; style: string; icon: string }

/** The built console's files, or undefined where `npm run build:console` has not run. */
export async function consoleBuild(): Promise<Manifest | undefined> {
  return readFile(join(DIST, 'manifest.json'), 'utf8').then((text) => JSON.parse(text) as Manifest, () => undefined);
}

/** The policy of every console answer: this origin's files only, framed only where configured. */
export function consolePolicy(config: Pick<Config, 'consoleFrameAncestors' | 'publicBaseUrl' | 's3' | 'storageDriver'>): Record<string, string> {
  // Stored images and uploads may live on the S3 endpoint browsers reach; nothing else is allowed.
  const storage = config.storageDriver === 's3' && config.s3.publicEndpoint ? ` ${new URL(config.s3.publicEndpoint).origin}` : '';
  const ancestors = config.consoleFrameAncestors.length > 0 ? config.consoleFrameAncestors.join(' ') : "'none'";
  const policy = [
    "default-src 'none'", "script-src 'self'", "style-src 'self'", `img-src 'self' blob:${storage}`,
    `connect-src 'self'${storage}`, "form-action 'none'", "base-uri 'none'", `frame-ancestors ${ancestors}`,
  ].join('; ');
  return {
    'content-security-policy': policy,
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    ...(config.consoleFrameAncestors.length === 0 ? { 'x-frame-options': 'DENY' } : {}),
  };
}

const page = (manifest: Manifest) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Catalog console</title>
  <link rel="icon" href="/console/assets/${manifest.icon}">
  <link rel="stylesheet" href="/console/assets/${manifest.style}">
  <script type="module" src="/console/assets/${manifest.script}"></script>
</head>
<body>
  <div id="console"><main><p>Loading the console…</p></main></div>
  <noscript><p>The catalog console needs JavaScript.</p></noscript>
</body>
</html>
`;

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Catalog console</title></head>
<body><main><h1>The console is not built</h1>
<p>This installation has no console/dist. Run <code>npm run build:console</code> (npm install runs it) and reload.</p></main></body></html>
`;

function encodingOf(req: IncomingMessage): 'br' | 'gzip' | undefined {
  const accepted = String(req.headers['accept-encoding'] ?? '');
  if (/\bbr\b/.test(accepted)) return 'br';
  if (/\bgzip\b/.test(accepted)) return 'gzip';
  return undefined;
}

/** Serves /console (the page) and /console/assets/* (the built files); false for any other path. */
export function consoleRoutes(config: Config) {
  const headers = consolePolicy(config);
  let manifest: Promise<Manifest | undefined> | undefined;
  const loadManifest = () => (manifest ??= consoleBuild());
  return async (req: IncomingMessage, res: ServerResponse, path: string, base: Record<string, string>): Promise<boolean> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    if (path === '/console' || path === '/console/') {
      const built = await loadManifest();
      // The page is the same for everyone; the link's token is in the fragment, which no request carries.
      const body = built ? page(built) : NOT_BUILT;
      res.writeHead(built ? 200 : 503, { ...base, ...headers, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-length': String(Buffer.byteLength(body)) });
      res.end(req.method === 'HEAD' ? undefined : body);
      return true;
    }
    const asset = ASSET.exec(path);
    if (!asset) return false;
    const [, name, ext] = asset;
    const encoding = encodingOf(req);
    const body = await readFile(join(DIST, encoding ? `${name}.${encoding}` : name!)).catch(() => undefined);
    if (!body) return false;
    res.writeHead(200, {
      ...base, ...headers, 'content-type': TYPES[ext!]!, 'content-length': String(body.length), vary: 'accept-encoding',
      // File names carry their content's hash: a new build is a new name.
      'cache-control': 'public, max-age=31536000, immutable', ...(encoding ? { 'content-encoding': encoding } : {}),
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  };
}
