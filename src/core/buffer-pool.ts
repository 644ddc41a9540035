/**
 * 1 MiB buffers that part bytes pass through on their way to a blob store (decoded base64,
 * raw bodies, body-first chunks held until their part is known), shared and reused: each
 * part would otherwise allocate a few, and the garbage would pile up faster than the
 * collector returns it. A few are kept spare; the rest go back to the collector.
 */
export const POOL_BUFFER_BYTES = 1 << 20;
const MAX_SPARE = 8;
const spare: Buffer[] = [];

export function takeBuffer(): Buffer {
  return spare.pop() ?? Buffer.allocUnsafe(POOL_BUFFER_BYTES);
}

/** Hands buffers back once nothing refers to their bytes any more. */
export function giveBack(...buffers: Buffer[]): void {
  for (const b of buffers) if (spare.length < MAX_SPARE && b.length === POOL_BUFFER_BYTES) spare.push(b);
}
