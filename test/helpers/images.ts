/** Small images for the variant tests, made with sharp, and a PNG decompression bomb. */
import { createDeflate, crc32 } from 'node:zlib';
import sharp from 'sharp';

/** A solid image of `width`×`height` in a format; JPEG can carry an EXIF orientation. */
export async function solidImage(format: 'jpeg' | 'png' | 'webp' | 'avif' | 'gif' | 'tiff', width: number, height: number, opts: { alpha?: boolean; orientation?: number } = {}): Promise<Buffer> {
  let image = sharp({ create: { width, height, channels: opts.alpha ? 4 : 3, background: { r: 200, g: 30, b: 60, alpha: opts.alpha ? 0.5 : 1 } } });
  if (opts.orientation) image = image.withMetadata({ orientation: opts.orientation }).withExifMerge({ IFD0: { Copyright: 'coffer-test', Artist: 'coffer' } });
  return image.toFormat(format).toBuffer();
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/**
 * A PNG of `side`×`side` one-bit pixels, all zero: a few dozen kilobytes on disk that
 * decode to side² bytes (400 MB for 20,000). Deflated row by row, never held whole.
 */
export async function pngBomb(side: number): Promise<Buffer> {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(side, 0);
  ihdr.writeUInt32BE(side, 4);
  ihdr[8] = 1; // bit depth
  ihdr[9] = 0; // greyscale
  const row = Buffer.alloc(1 + Math.ceil(side / 8)); // filter byte 0, then zeros
  const deflate = createDeflate({ level: 9 });
  const out: Buffer[] = [];
  deflate.on('data', (c: Buffer) => out.push(c));
  const done = new Promise<void>((resolve, reject) => {
    deflate.on('end', resolve);
    deflate.on('error', reject);
  });
  const batch = Buffer.concat(Array.from({ length: 256 }, () => row));
  for (let rows = 0; rows < side; rows += 256) {
    const n = Math.min(256, side - rows);
    if (!deflate.write(n === 256 ? batch : batch.subarray(0, n * row.length))) await new Promise((r) => deflate.once('drain', r));
  }
  deflate.end();
  await done;
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', ihdr), chunk('IDAT', Buffer.concat(out)), chunk('IEND', Buffer.alloc(0))]);
}
