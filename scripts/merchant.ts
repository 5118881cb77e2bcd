// A stand-in for a merchant's own systems on this machine, for trying the service: receives webhooks (verifying their signatures) and serves images.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { SIGNATURE_HEADER, constructEvent, SignatureVerificationError } from 'catalog-service'; // the package's own export, as a receiver imports it

const USAGE = `Usage: npm run merchant -- [--port 4000] [--secret whsec_…]

  POST any path   a webhook delivery: its signature is checked with --secret (or
                  CATALOG_WEBHOOK_SECRET); prints "<type> <resourceId> verified" and answers 204,
                  or prints why not and answers 400
  GET /images/NAME.jpg|.png|.webp
                  a 1200×900 image of that format, its colour derived from NAME (the same
                  bytes for the same name), with an ETag
Listens on 127.0.0.1. The service reaches it only when started with
WEBHOOK_ALLOW_HTTP=true OUTBOUND_ALLOW_PRIVATE=true (development only).
`;

const FORMATS = { jpg: 'image/jpeg', png: 'image/png', webp: 'image/webp' } as const;
type Format = keyof typeof FORMATS;

async function image(name: string, format: Format): Promise<Buffer> {
  const [r = 0, g = 0, b = 0] = createHash('sha256').update(name).digest();
  const base = sharp({ create: { width: 1200, height: 900, channels: 3, background: { r, g, b } } });
  return base[format === 'jpg' ? 'jpeg' : format]().toBuffer();
}

function serve(port: number, secret: string | undefined): void {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const seen = new Set<string>(); // delivery is at least once: a receiver deduplicates by event id
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const images = /^\/images\/([\w.-]+)\.(jpg|png|webp)$/.exec(req.url ?? '');
        if (req.method === 'GET' && images) {
          const bytes = await image(images[1]!, images[2] as Format);
          const etag = `"${createHash('sha256').update(bytes).digest('hex').slice(0, 32)}"`;
          if (req.headers['if-none-match'] === etag) return res.writeHead(304, { ETag: etag }).end();
          return res.writeHead(200, { 'Content-Type': FORMATS[images[2] as Format], 'Content-Length': bytes.length, ETag: etag }).end(bytes);
        }
        if (req.method !== 'POST') return res.writeHead(404).end();
        if (!secret) {
          out('refused a delivery: no secret (--secret or CATALOG_WEBHOOK_SECRET)');
          return res.writeHead(500).end();
        }
        const header = req.headers[SIGNATURE_HEADER] as string | undefined;
        const event = await constructEvent({ header, body: Buffer.concat(chunks), secret });
        out(`${event.type} ${event.resourceId} verified${seen.has(event.id) ? ' (seen before: a repeat)' : ''}`);
        seen.add(event.id);
        res.writeHead(204).end();
      })().catch((error: unknown) => {
        out(error instanceof SignatureVerificationError ? `rejected a delivery: ${error.message}` : `error: ${String(error)}`);
        if (!res.headersSent) res.writeHead(error instanceof SignatureVerificationError ? 400 : 500).end();
      });
    });
  });
  server.listen(port, '127.0.0.1', () => process.stderr.write(`merchant stand-in on http://127.0.0.1:${port}\n`));
  server.on('error', (error) => {
    process.stderr.write(`merchant stand-in: ${error.message}\n`);
    process.exitCode = 1;
  });
}

const { values } = parseArgs({ options: { port: { type: 'string', default: '4000' }, secret: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
if (values.help) process.stdout.write(USAGE);
else serve(Number(values.port), values.secret ?? process.env.CATALOG_WEBHOOK_SECRET);
