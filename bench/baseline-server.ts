// The items benchmark's baseline: bare node:http + pg, one INSERT … ON CONFLICT per request, same table.
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
const catalogId = process.env.CATALOG_ID!;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', async () => {
    try {
      const raw = Buffer.concat(chunks);
      const item = JSON.parse(raw.toString('utf8')) as { externalSystem: string; externalId: string; name: string; sku?: string; price?: number };
      const { rows } = await pool.query(
        `INSERT INTO items (id, catalog_id, external_system, external_id, sku, name, price, content_hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (catalog_id, external_system, external_id) DO UPDATE
           SET sku = excluded.sku, name = excluded.name, price = excluded.price, content_hash = excluded.content_hash
         RETURNING id, (xmax = 0) AS inserted`,
        [randomUUID(), catalogId, item.externalSystem, item.externalId, item.sku ?? null, item.name, item.price ?? null,
          createHash('sha256').update(raw).digest('hex')],
      );
      const body = JSON.stringify({ success: true, data: { serviceId: rows[0].id, outcome: rows[0].inserted ? 'created' : 'updated' } });
      res.writeHead(rows[0].inserted ? 201 : 200, { 'content-type': 'application/json' });
      res.end(body);
    } catch (error) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ success: false, error: { code: 'error', message: String(error) } }));
    }
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
