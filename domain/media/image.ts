// The image edge: file-type says what the bytes are, sharp (configured here, once) reads and decodes them under a pixel limit.

/** Decompression bombs: a few KB of PNG can declare a 20,000 × 20,000 canvas (400 MP, 1.6 GB decoded). */
export const MAX_INPUT_PIXELS = 50_000_000;

// The formats sharp's prebuilt libvips decodes; anything else named "image/…" is refused.
const DECODABLE = new Map<string, string>([
  ['image/jpeg', 'jpeg'], ['image/png', 'png'], ['image/webp', 'webp'], ['image/gif', 'gif'],
  ['image/avif', 'avif'], ['image/tiff', 'tiff'],
]);

type Sharp = typeof import('sharp').default;
type FileTypeFromBuffer = typeof import('file-type').fileTypeFromBuffer;

let libraries: Promise<{ sharp: Sharp; fileTypeFromBuffer: FileTypeFromBuffer }> | undefined;

/**
 * sharp and file-type, loaded on the first image: libvips adds megabytes to a process, which
 * one that never ingests an image (an import running in the consumers process) need not hold.
 * A failed load is tried again with the next image.
 */
export function imageLibraries() {
  libraries ??= Promise.all([import('sharp'), import('file-type')]).then(([{ default: sharp }, { fileTypeFromBuffer }]) => {
    // Decoded images are not reused, so libvips' operation cache only holds memory.
    sharp.cache(false);
    return { sharp, fileTypeFromBuffer };
  }, (error: unknown) => {
    libraries = undefined;
    throw error;
  });
  return libraries;
}

export type ImageRejection = 'not_an_image' | 'too_large' | 'undecodable';

export class ImageRejected extends Error {
  override name = 'ImageRejected';
  readonly reason: ImageRejection;
  constructor(reason: ImageRejection, message: string) {
    super(message);
    this.reason = reason;
  }
}

export interface ImageInfo {
  /** From the bytes, never from the Content-Type header. */
  readonly contentType: string;
  readonly format: string;
  readonly width: number;
  readonly height: number;
}

const open = (sharp: Sharp, bytes: Buffer) => sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error', sequentialRead: true });

/**
 * Checks that `bytes` are an image sharp can decode and reads its type and size. The header
 * is read first, so an oversized canvas is refused before any pixel is decoded; then the
 * image is decoded once (down to a thumbnail), which catches truncated and corrupt data.
 */
export async function inspectImage(bytes: Buffer): Promise<ImageInfo> {
  const { sharp, fileTypeFromBuffer } = await imageLibraries();
  const detected = await fileTypeFromBuffer(bytes);
  if (!detected || !detected.mime.startsWith('image/')) {
    throw new ImageRejected('not_an_image', detected ? `the content is ${detected.mime}, not an image` : 'the content is not a recognizable image');
  }
  const format = DECODABLE.get(detected.mime);
  if (!format) throw new ImageRejected('not_an_image', `${detected.mime} is not a supported image type`);
  let width: number | undefined;
  let height: number | undefined;
  try {
    const metadata = await open(sharp, bytes).metadata();
    width = metadata.autoOrient?.width ?? metadata.width;
    height = metadata.autoOrient?.height ?? metadata.height;
    if (!width || !height) throw new ImageRejected('undecodable', 'the image has no dimensions');
    await open(sharp, bytes).resize({ width: 64, height: 64, fit: 'inside', withoutEnlargement: true }).raw().toBuffer();
  } catch (error) {
    if (error instanceof ImageRejected) throw error;
    const message = (error as Error).message ?? String(error);
    if (/pixel limit/i.test(message)) {
      throw new ImageRejected('too_large', `the image has more pixels than the ${MAX_INPUT_PIXELS.toLocaleString('en')} pixel limit`);
    }
    throw new ImageRejected('undecodable', `the ${format} image cannot be decoded: ${message.split('\n')[0]}`);
  }
  return { contentType: detected.mime, format, width, height };
}
