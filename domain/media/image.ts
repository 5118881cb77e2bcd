// The image edge: file-type says what the bytes are, sharp (configured here, once) reads and decodes them under a pixel limit.
import { detached } from '../../platform/async-context.ts';

/** Decompression bombs: a few KB of PNG can declare a 20,000 × 20,000 canvas (400 MP, 1.6 GB decoded). */
export const MAX_INPUT_PIXELS = 50_000_000;

// The formats sharp's prebuilt libvips decodes; anything else named "image/…" is refused.
const DECODABLE = new Map<string, string>([
  ['image/jpeg', 'jpeg'], ['image/png', 'png'], ['image/webp', 'webp'], ['image/gif', 'gif'],
  ['image/avif', 'avif'], ['image/tiff', 'tiff'],
]);

type Sharp = typeof import('sharp').default;
type FileType = Pick<typeof import('file-type'), 'fileTypeFromBuffer' | 'fileTypeFromFile'>;

let libraries: Promise<{ sharp: Sharp; fileType: FileType }> | undefined;

/**
 * sharp and file-type, loaded on the first image: libvips adds megabytes to a process, which
 * one that never ingests an image (an import running in the consumers process) need not hold.
 * A failed load is tried again with the next image.
 */
export function imageLibraries() {
  libraries ??= detached(() => Promise.all([import('sharp'), import('file-type')])).then(([{ default: sharp }, fileType]) => {
    // Decoded images are not reused, so libvips' operation cache only holds memory.
    sharp.cache(false);
    // One libvips thread per image: images are worked on side by side (as many as cores,
    // renditions.ts), and each thread's buffers and malloc arena are memory the process keeps.
    sharp.concurrency(1);
    return { sharp, fileType };
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
  /** As displayed: EXIF orientation applied. */
  readonly width: number;
  readonly height: number;
  /** The EXIF orientation (1–8), when the image has one. */
  readonly orientation: number | undefined;
}

const open = (sharp: Sharp, input: Buffer | string) => sharp(input, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error', sequentialRead: true });

/** What sharp threw while decoding, as the reason it gives: too many pixels, or undecodable data. */
export function decodeRejection(error: unknown, format: string): ImageRejected {
  if (error instanceof ImageRejected) return error;
  const message = (error as Error).message ?? String(error);
  if (/pixel limit/i.test(message)) {
    return new ImageRejected('too_large', `the image has more pixels than the ${MAX_INPUT_PIXELS.toLocaleString('en')} pixel limit`);
  }
  return new ImageRejected('undecodable', `the ${format} image cannot be decoded: ${message.split('\n')[0]}`);
}

/**
 * Checks that `input` (bytes, or a file's path) is an image sharp can decode and reads its type and size. The header
 * is read first, so an oversized canvas is refused before any pixel is decoded; then, with
 * `decode` (the default), the image is decoded once (down to a thumbnail), which catches
 * truncated and corrupt data. Without it the caller's own decode must (the renditions').
 */
export async function inspectImage(input: Buffer | string, options: { decode?: boolean } = {}): Promise<ImageInfo> {
  const { sharp, fileType } = await imageLibraries();
  const detected = typeof input === 'string' ? await fileType.fileTypeFromFile(input) : await fileType.fileTypeFromBuffer(input);
  if (!detected || !detected.mime.startsWith('image/')) {
    throw new ImageRejected('not_an_image', detected ? `the content is ${detected.mime}, not an image` : 'the content is not a recognizable image');
  }
  const format = DECODABLE.get(detected.mime);
  if (!format) throw new ImageRejected('not_an_image', `${detected.mime} is not a supported image type`);
  try {
    const metadata = await open(sharp, input).metadata();
    const width = metadata.autoOrient?.width ?? metadata.width;
    const height = metadata.autoOrient?.height ?? metadata.height;
    if (!width || !height) throw new ImageRejected('undecodable', 'the image has no dimensions');
    if (options.decode ?? true) await open(sharp, input).resize({ width: 64, height: 64, fit: 'inside', withoutEnlargement: true }).raw().toBuffer();
    return { contentType: detected.mime, format, width, height, orientation: metadata.orientation };
  } catch (error) {
    throw decodeRejection(error, format);
  }
}
