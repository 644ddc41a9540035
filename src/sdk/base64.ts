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
  from(data: ArrayBufferLike, byteOffset: number, length: number): { toString(encoding: 'base64', start?: number, end?: number): string; write(text: string, offset: number, encoding: 'latin1'): number };
}

/**
 * Bytes encoded per string in Node: a multiple of 3 (the pieces join without padding) whose
 * base64 stays under V8's large-object size (128 KiB). A 5 MiB chunk's base64 as one string
 * costs several times the CPU: each large string is an allocation of its own.
 */
const NODE_PIECE = 3 * 16 * 1024;

/** Length of the base64 text of `n` bytes, padding included. */
export const base64Length = (n: number): number => Math.ceil(n / 3) * 4;

/**
 * Writes the base64 of `bytes` into `target` at `offset` as ASCII bytes, so a request body
 * is built without a multi-megabyte string to scan or re-encode. Returns the bytes written.
 */
export function encodeBase64Into(bytes: Uint8Array, target: Uint8Array, offset: number): number {
  const NodeBuffer = (globalThis as unknown as { Buffer?: BufferLike }).Buffer;
  if (NodeBuffer) {
    const source = NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const out = NodeBuffer.from(target.buffer, target.byteOffset, target.byteLength);
    let o = offset;
    for (let at = 0; at < bytes.length; at += NODE_PIECE) o += out.write(source.toString('base64', at, Math.min(bytes.length, at + NODE_PIECE)), o, 'latin1');
    return o - offset;
  }
  return encodeTable(bytes, target, offset);
}

function encodeTable(bytes: Uint8Array, out: Uint8Array, start: number): number {
  const whole = bytes.length - (bytes.length % 3);
  let o = start;
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
  return o - start;
}

export function encodeBase64(bytes: Uint8Array): string {
  // Node's native encoder is faster still; reached through globalThis so browsers never need it.
  const NodeBuffer = (globalThis as unknown as { Buffer?: BufferLike }).Buffer;
  if (NodeBuffer) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  const out = new Uint8Array(base64Length(bytes.length));
  encodeTable(bytes, out, 0);
  return ascii.decode(out);
}
