// Renditions: an ingested image scaled down with sharp into WebP (EXIF orientation applied, metadata dropped), once per distinct content.
import { hash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import pLimit from 'p-limit';
import type { RenditionSpec } from '../../platform/config/config.ts';
import { MAX_INPUT_PIXELS, decodeRejection, imageLibraries } from './image.ts';
import type { ImageInfo } from './image.ts';
import type { MediaStore } from './media-store.ts';

export const RENDITION_TYPE = 'image/webp';
// WebP at quality 80: about a tenth of a JPEG's bytes at q90 for the same look at these sizes.
// Effort 0 of 6 costs half the default's CPU for files a few per cent larger (bench/results/2026-11-24-media.md).
const WEBP = { quality: 80, effort: 0 } as const;

/** A rendition as stored on the asset (media_assets.renditions) and shown in the contract, less its address. */
export interface Rendition {
  readonly name: string;
  readonly size: number;
  readonly contentType: typeof RENDITION_TYPE;
  readonly width: number;
  readonly height: number;
  readonly byteSize: number;
  readonly contentSha256: string;
}

/** True when `renditions` are exactly the configured ones (names and sizes): nothing to make. */
export function matchesSpecs(renditions: readonly Rendition[] | null, specs: readonly RenditionSpec[]): boolean {
  if (renditions === null) return specs.length === 0;
  return renditions.length === specs.length && specs.every((spec) => renditions.some((r) => r.name === spec.name && r.size === spec.size));
}

export interface RenditionMaker {
  readonly specs: readonly RenditionSpec[];
  /**
   * The renditions of an image: another asset's, when one with the same bytes has the configured
   * ones; else made from `input` (bytes, or a file's path) and stored content-addressed like originals. Smallest first.
   * The image is decoded here in full: data sharp cannot decode is ImageRejected (`undecodable`,
   * or `too_large` past the pixel limit); storage errors pass through.
   */
  forImage(contentSha256: string, input: Buffer | string, image: Pick<ImageInfo, 'format' | 'orientation'>): Promise<Rendition[]>;
}

// Orientations 2–8 flip or turn the image: rows are read out of order, which a sequential read cannot.
const upright = (orientation: number | undefined) => orientation === undefined || orientation === 1;

export function createRenditionMaker(options: {
  specs: readonly RenditionSpec[];
  store: MediaStore;
  /** Renditions already made for these bytes (under another URL or in another catalog), if any. */
  known: (contentSha256: string) => Promise<readonly (readonly Rendition[])[]>;
}): RenditionMaker {
  const specs = [...options.specs].sort((a, b) => a.size - b.size);
  const largest = specs.at(-1);
  // Decoding and encoding use the CPU to the full: more of them at once than there are cores
  // would only add each one's working memory (a 20 MB image's rows) to the process.
  const cpu = pLimit(availableParallelism());
  return {
    specs,
    async forImage(contentSha256, input, image) {
      if (!largest) return [];
      // The lookup takes the same turn as the work: a connection each for the images in flight
      // (MEDIA_CONCURRENCY) would leave the process's other consumers waiting for the pool.
      const turn = await cpu(async (): Promise<{ reused: Rendition[] } | { encoded: Encoded[] }> => {
        const reusable = (await options.known(contentSha256)).find((made) => matchesSpecs(made, specs));
        return reusable ? { reused: [...reusable] } : { encoded: await encode(input, image, specs, largest) };
      });
      if ('reused' in turn) return turn.reused;
      const { encoded } = turn;
      const made: Rendition[] = [];
      for (const [i, { data, width, height }] of encoded.entries()) {
        const sha = hash('sha256', data, 'hex');
        if (!made.some((r) => r.contentSha256 === sha)) await options.store.put(sha, data, RENDITION_TYPE);
        made.push({ name: specs[i]!.name, size: specs[i]!.size, contentType: RENDITION_TYPE, width, height, byteSize: data.length, contentSha256: sha });
      }
      return made;
    },
  };
}

/**
 * The WebP bytes of each spec's rendition, in order: one decode, turned upright (autoOrient) and
 * scaled to the largest box; the smaller ones are scaled from those pixels. sharp writes no
 * metadata unless asked: no EXIF, GPS, ICC or XMP, and no orientation flag left to misread.
 */
type Encoded = { data: Buffer; width: number; height: number };

async function encode(
  input: Buffer | string, image: Pick<ImageInfo, 'format' | 'orientation'>, specs: readonly RenditionSpec[], largest: RenditionSpec,
): Promise<Encoded[]> {
  const { sharp } = await imageLibraries();
  let base: { data: Buffer; info: { width: number; height: number; channels: number } };
  try {
    base = await sharp(input, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error', sequentialRead: upright(image.orientation) })
      .autoOrient().resize(box(largest.size)).raw().toBuffer({ resolveWithObject: true });
  } catch (error) {
    throw decodeRejection(error, image.format);
  }
  const raw = { raw: { width: base.info.width, height: base.info.height, channels: base.info.channels as 1 | 2 | 3 | 4 } };
  const webp = (pipeline: ReturnType<typeof sharp>) => pipeline.webp(WEBP).toBuffer({ resolveWithObject: true })
    .then(({ data, info }) => ({ data, width: info.width, height: info.height }));
  // A box the image already fits in gives the image itself: encoded once, shared by all such boxes.
  let whole: ReturnType<typeof webp> | undefined;
  const out = [];
  for (const spec of specs) {
    const fits = base.info.width <= spec.size && base.info.height <= spec.size;
    out.push(await (fits ? (whole ??= webp(sharp(base.data, raw))) : webp(sharp(base.data, raw).resize(box(spec.size)))));
  }
  return out;
}

const box = (size: number) => ({ width: size, height: size, fit: 'inside' as const, withoutEnlargement: true });
