/**
 * One image variant made with sharp (libvips, prebuilt through npm): EXIF orientation
 * applied, resized within `w`×`h` by `fit`, re-encoded, every piece of metadata left out.
 * sharp decodes on libuv's thread pool and its own threads, never on the event loop.
 */
import type { Sharp, SharpOptions } from 'sharp';
import type { OutputFormat, VariantParams } from '../../core/variants.js';
import { statusOf, type ErrorCode } from '../../core/error-codes.js';

/** An answer of contract §13 for a variant that cannot be made. */
export class VariantError extends Error {
  constructor(readonly code: ErrorCode, message: string, readonly details: Record<string, unknown> = {}) {
    super(message);
  }

  get status(): number {
    return statusOf(this.code);
  }

  /** Seconds a client should wait before asking again, when it says. */
  get retryAfter(): number | undefined {
    const r = this.details.retry_after;
    return typeof r === 'number' ? r : undefined;
  }
}

export interface TransformInput {
  /** The source on disk, read by libvips as it goes. */
  path?: string;
  /** A small source already in memory. */
  memory?: Buffer;
}

/** A transform that runs longer than this is given up (libvips checks it between tiles). */
export const TIMEOUT_SECONDS = 60;

type SharpFactory = (input?: string | Buffer, options?: SharpOptions) => Sharp;
let loaded: Promise<SharpFactory> | null = null;

/** sharp is loaded on the first variant: an edge that never makes one never maps libvips. */
export function loadSharp(): Promise<SharpFactory> {
  loaded ??= import('sharp').then((m) => {
    const sharp = m.default;
    // libvips' operation cache would keep decoded images alive between requests.
    sharp.cache(false);
    // Only the six source formats of contract §13 are decoded, whatever the bytes claim to be:
    // an SVG stored as image/png read from its cache path could pull in a sibling file of the
    // cache (librsvg resolves references next to the file), and the other loaders (PPM, FITS,
    // the vips format, ...) are attack surface no variant needs.
    sharp.block({ operation: ['VipsForeignLoad'] });
    sharp.unblock({ operation: ['VipsForeignLoadJpeg', 'VipsForeignLoadPng', 'VipsForeignLoadWebp', 'VipsForeignLoadHeif', 'VipsForeignLoadNsgif', 'VipsForeignLoadTiff'] });
    return sharp as unknown as SharpFactory;
  });
  return loaded;
}

/** sharp's errors, sorted into the contract's answers. */
function classify(err: unknown): VariantError {
  const message = err instanceof Error ? err.message : String(err);
  if (/pixel limit/i.test(message)) {
    return new VariantError('image_too_large', 'The image has more pixels than this edge makes variants of.');
  }
  if (/timeout/i.test(message)) return new VariantError('invalid_image', 'The image took too long to decode.');
  return new VariantError('invalid_image', 'The image could not be decoded.');
}

/** Makes the variant's bytes; rejects with a VariantError. */
export async function transform(input: TransformInput, params: VariantParams, out: OutputFormat, maxPixels: number): Promise<Buffer> {
  const sharp = await loadSharp();
  const source = input.memory ?? input.path;
  if (source === undefined) throw new VariantError('edge_unavailable', 'The image is not at this edge; try again.');
  try {
    // The pixel limit is checked against the header before a pixel is decoded: a small
    // file claiming a huge image is refused without the memory it would take.
    const image = sharp(source, { limitInputPixels: maxPixels, sequentialRead: true, failOn: 'error' })
      .timeout({ seconds: TIMEOUT_SECONDS })
      .rotate();
    if (params.w !== undefined || params.h !== undefined) {
      // A variant is never larger than its source; `contain` pads with transparency (white in JPEG).
      image.resize({
        ...(params.w !== undefined ? { width: params.w } : {}),
        ...(params.h !== undefined ? { height: params.h } : {}),
        fit: params.fit ?? 'inside',
        withoutEnlargement: true,
        background: { r: 255, g: 255, b: 255, alpha: out === 'jpeg' ? 1 : 0 },
      });
    }
    const q = params.q;
    switch (out) {
      case 'jpeg':
        image.flatten({ background: '#ffffff' }).jpeg({ ...(q ? { quality: q } : {}), mozjpeg: false });
        break;
      case 'webp':
        image.webp(q ? { quality: q } : {});
        break;
      case 'avif':
        image.avif(q ? { quality: q } : {});
        break;
      case 'png':
        // `q` on PNG means a palette quantised to that quality.
        image.png(q ? { palette: true, quality: q } : {});
        break;
      case 'gif':
        image.gif();
        break;
    }
    // No withMetadata(): EXIF, XMP, ICC and comments stay behind.
    return await image.toBuffer();
  } catch (err) {
    throw classify(err);
  }
}
