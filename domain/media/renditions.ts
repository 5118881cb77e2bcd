// Renditions: an ingested image scaled down with sharp into WebP (EXIF orientation applied, metadata dropped), once per distinct content.
import { hash } from 'node:crypto';
import type { RenditionSpec } from '../../platform/config/config.ts';
import { ImageRejected, MAX_INPUT_PIXELS, imageLibraries } from './image.ts';
import type { MediaStore } from './media-store.ts';

export const RENDITION_TYPE = 'image/webp';
// WebP at quality 80: about a tenth of a JPEG's bytes at q90 for the same look at these sizes.
// Effort 2 of 6 costs a third of the default's CPU for files a few per cent larger.
const WEBP = { quality: 80, effort: 2 } as const;

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
   * ones; else made from `bytes` and stored content-addressed like originals. Smallest first.
   * An image sharp cannot scale is ImageRejected (`undecodable`); storage errors pass through.
   */
  forImage(contentSha256: string, bytes: Buffer): Promise<Rendition[]>;
}

export function createRenditionMaker(options: {
  specs: readonly RenditionSpec[];
  store: MediaStore;
  /** Renditions already made for these bytes (under another URL or in another catalog), if any. */
  known: (contentSha256: string) => Promise<readonly (readonly Rendition[])[]>;
}): RenditionMaker {
  const specs = [...options.specs].sort((a, b) => a.size - b.size);
  return {
    specs,
    async forImage(contentSha256, bytes) {
      if (specs.length === 0) return [];
      const reusable = (await options.known(contentSha256)).find((made) => matchesSpecs(made, specs));
      if (reusable) return [...reusable];
      const { sharp } = await imageLibraries();
      const made: Rendition[] = [];
      for (const spec of specs) {
        // autoOrient: the pixels are turned as EXIF says, and the output carries no metadata at all
        // (sharp writes none unless asked): no GPS, no camera, no orientation flag left to misread.
        let scaled: { data: Buffer; info: { width: number; height: number } };
        try {
          // Random access (no sequentialRead): turning a 90° orientation reads the rows out of order.
          scaled = await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error' }).autoOrient()
            .resize({ width: spec.size, height: spec.size, fit: 'inside', withoutEnlargement: true })
            .webp(WEBP).toBuffer({ resolveWithObject: true });
        } catch (error) {
          throw new ImageRejected('undecodable', `renditions cannot be made of the image: ${(error as Error).message.split('\n')[0]}`);
        }
        const { data, info } = scaled;
        const sha = hash('sha256', data, 'hex');
        await options.store.put(sha, data, RENDITION_TYPE);
        made.push({ name: spec.name, size: spec.size, contentType: RENDITION_TYPE, width: info.width, height: info.height, byteSize: data.length, contentSha256: sha });
      }
      return made;
    },
  };
}
