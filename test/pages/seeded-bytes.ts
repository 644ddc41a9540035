/** Bytes from a seed (xorshift32), the same in a page and in Node: a large file both sides know without sending it. */
export function seededBytes(size: number, seed: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(new ArrayBuffer(size));
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i += 4) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
    if (i + 1 < size) out[i + 1] = (x >>> 8) & 0xff;
    if (i + 2 < size) out[i + 2] = (x >>> 16) & 0xff;
    if (i + 3 < size) out[i + 3] = (x >>> 24) & 0xff;
  }
  return out;
}

