// bench:import's realistic profile: lines naming 1–2 of a few hundred images served by a local origin, and 2 % bad lines of four kinds; then the media it leaves behind.
import { createWriteStream, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { makeImage, startImageOrigin } from '../test/helpers/image-origin.ts';
import type { ImageOrigin } from '../test/helpers/image-origin.ts';
import { benchLine } from './import-lines.ts';

/** Distinct images the realistic file names, as a merchant's catalog reuses its pictures. */
export const IMAGES = 300;
// Every 50th line is bad: 2 %, of four kinds in turn.
const BAD_EVERY = 50;

/** The origin serving the images: JPEGs of 640×480, each distinct. */
export async function imageOriginForBench(): Promise<ImageOrigin> {
  const origin = await startImageOrigin();
  for (let k = 0; k < IMAGES; k += 1) origin.serve(`/img/${k}.jpg`, { body: await makeImage('jpeg', 640, 480, 5000 + k), contentType: 'image/jpeg' });
  return origin;
}

/** Line i of the realistic file: the clean line with one or two images, or a bad line. */
export function realisticLine(i: number, origin: ImageOrigin): string {
  const line = JSON.parse(benchLine(i)) as Record<string, unknown>;
  line.externalId = `REAL-${String(i).padStart(7, '0')}`;
  line.sku = `RSKU-${String(i).padStart(7, '0')}`;
  const first = (i * 7) % IMAGES;
  line.media = i % 2 === 0
    ? [{ url: origin.at(`/img/${first}.jpg`), role: 'primary', sortOrder: 0 }]
    : [{ url: origin.at(`/img/${first}.jpg`), role: 'primary', sortOrder: 0 }, { url: origin.at(`/img/${(first + 1) % IMAGES}.jpg`), role: 'gallery', sortOrder: 1 }];
  if (i % BAD_EVERY !== BAD_EVERY - 1) return JSON.stringify(line);
  switch ((i / BAD_EVERY | 0) % 4) {
    case 0: return JSON.stringify({ ...line, gtin13: '4006381333932' });
    case 1: return JSON.stringify({ ...line, price: 'twelve' });
    case 2: return JSON.stringify(line).slice(0, 80);
    default: return JSON.stringify({ ...line, sku: `RSKU-${String(i - 1).padStart(7, '0')}` });
  }
}

export async function writeRealisticFile(path: string, lines: number, origin: ImageOrigin): Promise<number> {
  await pipeline(Readable.from((function* () { for (let i = 0; i < lines; i += 1) yield `${realisticLine(i, origin)}\n`; })()), createWriteStream(path));
  return statSync(path).size;
}

/** The catalog's images: ingested, failed, pending, and how many renditions the ingested ones have. */
export async function mediaState(databaseUrl: string, catalogId: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT count(*) FILTER (WHERE status = 'ingested')::int AS ingested,
        count(*) FILTER (WHERE status = 'failed')::int AS failed, count(*) FILTER (WHERE status = 'pending')::int AS pending,
        coalesce(sum(jsonb_array_length(renditions)) FILTER (WHERE status = 'ingested' AND jsonb_typeof(renditions) = 'array'), 0)::int AS renditions
      FROM media_assets WHERE catalog_id = $1`, [catalogId]);
    return rows[0] as { ingested: number; failed: number; pending: number; renditions: number };
  } finally {
    await client.end();
  }
}
