/**
 * Base64 of a chunk without Node's Buffer, for browsers and workers: a table lookup into
 * one byte array, decoded as ASCII once. `btoa` over a 5 MiB binary string is several
 * times slower and builds a string per byte.
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const CODES = Uint8Array.from(ALPHABET, (c) => c.charCodeAt(0));
const PAD = 61; // '='
const ascii = new TextDecoder('latin1');

interface BufferLike {
  from(data: ArrayBufferLike, byteOffset: number, length: number): { toString(encoding: 'base64'): string };
}

export function encodeBase64(bytes: Uint8Array): string {
  // Node's native encoder is faster still; reached through globalThis so browsers never need it.
  const NodeBuffer = (globalThis as { Buffer?: BufferLike }).Buffer;
  if (NodeBuffer) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  const out = new Uint8Array(Math.ceil(bytes.length / 3) * 4);
  const whole = bytes.length - (bytes.length % 3);
  let o = 0;
  for (let i = 0; i < whole; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o++] = CODES[n >>> 18]!;
    out[o++] = CODES[(n >>> 12) & 63]!;
    out[o++] = CODES[(n >>> 6) & 63]!;
    out[o++] = CODES[n & 63]!;
  }
  const rest = bytes.length - whole;
  if (rest > 0) {
    const n = (bytes[whole]! << 16) | (rest === 2 ? bytes[whole + 1]! << 8 : 0);
    out[o++] = CODES[n >>> 18]!;
    out[o++] = CODES[(n >>> 12) & 63]!;
    out[o++] = rest === 2 ? CODES[(n >>> 6) & 63]! : PAD;
    out[o++] = PAD;
  }
  return ascii.decode(out);
}
