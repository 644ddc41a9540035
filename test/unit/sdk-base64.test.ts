/**
 * The SDK's base64 encoder (src/sdk/base64.ts): the pure-JS path browsers take must give
 * exactly what Node's Buffer gives, and the Buffer path must respect views into a larger
 * buffer.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeBase64 } from '../../src/sdk/base64.js';
import { CofferClient } from '../../src/sdk/client.js';

const viaBuffer = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

/**
 * Runs `fn` with `globalThis.Buffer` reading as undefined, as in a browser, and says how
 * often the encoder looked for it (so a test cannot pass by never taking the pure path).
 */
function withoutBuffer<T>(fn: () => T): { value: T; lookups: number } {
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'Buffer');
  expect(saved?.configurable).toBe(true);
  let lookups = 0;
  Object.defineProperty(globalThis, 'Buffer', { configurable: true, enumerable: false, get: () => { lookups++; return undefined; } });
  try {
    return { value: fn(), lookups };
  } finally {
    Object.defineProperty(globalThis, 'Buffer', saved!);
  }
}

const pure = (bytes: Uint8Array): string => {
  const { value, lookups } = withoutBuffer(() => encodeBase64(bytes));
  expect(lookups).toBeGreaterThan(0);
  return value;
};

describe('encodeBase64 without Buffer (the browser path)', () => {
  it('restores Buffer after hiding it', () => {
    pure(new Uint8Array([1, 2, 3]));
    expect(typeof globalThis.Buffer.from).toBe('function');
  });

  it('equals Buffer for every length 0..20, over random, zero and 0xff bytes', () => {
    for (let len = 0; len <= 20; len++) {
      for (const bytes of [new Uint8Array(randomBytes(len)), new Uint8Array(len), new Uint8Array(len).fill(0xff)]) {
        expect(pure(bytes), `length ${len}: ${Array.from(bytes).join(',')}`).toBe(viaBuffer(bytes));
      }
    }
    expect(pure(new Uint8Array(0))).toBe('');
    expect(pure(new Uint8Array([0xfb, 0xff]))).toBe('+/8=');
    expect(pure(new TextEncoder().encode('Man'))).toBe('TWFu');
    expect(pure(new TextEncoder().encode('Ma'))).toBe('TWE=');
    expect(pure(new TextEncoder().encode('M'))).toBe('TQ==');
  });

  it('equals Buffer for arbitrary arrays and for views at an offset (property)', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 3000 }), fc.nat(7), fc.nat(7), (arr, head, tail) => {
      const start = Math.min(head, arr.length);
      const view = arr.subarray(start, Math.max(start, arr.length - tail));
      expect(pure(arr)).toBe(viaBuffer(arr));
      expect(pure(view)).toBe(viaBuffer(view));
    }), { numRuns: 300 });
  });

  it('equals Buffer for large random arrays, one a whole 5 MiB chunk', () => {
    for (const len of [65_537, 1_000_001, 5 * 1024 * 1024]) {
      const bytes = new Uint8Array(randomBytes(len));
      expect(pure(bytes) === viaBuffer(bytes), `length ${len}`).toBe(true);
    }
  });
});

describe('encodeBase64 with Buffer (the Node path)', () => {
  it('encodes only the view, not the whole underlying buffer', () => {
    const big = new Uint8Array(randomBytes(1000));
    for (const [a, b] of [[0, 0], [3, 100], [1, 2], [997, 1000], [0, 1000]] as const) {
      const view = big.subarray(a, b);
      expect(encodeBase64(view)).toBe(Buffer.from(view).toString('base64'));
    }
  });

  it('agrees with the pure path on a pooled Buffer slice', () => {
    const pooled = Buffer.from('a small string lives in the shared pool');
    expect(pooled.byteOffset + pooled.length).toBeLessThanOrEqual(pooled.buffer.byteLength);
    expect(encodeBase64(pooled)).toBe(pooled.toString('base64'));
    expect(pure(pooled)).toBe(pooled.toString('base64'));
  });
});

describe('part bodies built as bytes (CofferClient.uploadPartBytes)', () => {
  const session = { fileId: 'f_1', bucket: 'b"q', key: 'k\\1', uploadId: 'u-1' };

  /** The body the client hands to fetch for one part, decoded and parsed. */
  async function sentBody(bytes: Uint8Array): Promise<Record<string, unknown>> {
    let captured: Uint8Array | null = null;
    const client = new CofferClient({
      url: 'http://coffer.invalid',
      fetch: async (_input, init) => {
        captured = init!.body as Uint8Array;
        // A plain object: undici's Response needs the Buffer this test hides.
        const text = '{"file_id":"f_1","partNumber":3,"size":0,"etag":"e","received_parts":1,"part_count":3}';
        return { ok: true, status: 200, headers: new Headers(), text: async () => text } as unknown as Response;
      },
    });
    await client.uploadPartBytes(session, 3, bytes);
    expect(captured).toBeInstanceOf(Uint8Array);
    const text = new TextDecoder().decode(captured!);
    // The chunk comes last, so the origin can stream it.
    expect(text.indexOf('"body":')).toBeGreaterThan(text.indexOf('"partNumber":'));
    return JSON.parse(text) as Record<string, unknown>;
  }

  it('is the JSON of the request, with Buffer and without', async () => {
    // Node encodes in 48 KiB pieces: lengths either side of a piece, and views at an offset.
    for (const n of [0, 1, 2, 3, 1000, 49_151, 49_152, 49_153, 3 * 49_152 + 2, 5 * 1024 * 1024]) {
      const bytes = new Uint8Array(randomBytes(n + 7)).subarray(5, 5 + n);
      const expected = { bucket: 'b"q', key: 'k\\1', uploadId: 'u-1', fileId: 'f_1', partNumber: 3, body: viaBuffer(bytes) };
      expect(await sentBody(bytes)).toEqual(expected);
      const saved = Object.getOwnPropertyDescriptor(globalThis, 'Buffer')!;
      Object.defineProperty(globalThis, 'Buffer', { configurable: true, value: undefined });
      try {
        expect(await sentBody(bytes)).toEqual(expected);
      } finally {
        Object.defineProperty(globalThis, 'Buffer', saved);
      }
    }
  });
});
