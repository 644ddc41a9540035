/**
 * A raw control character inside the "body" string is malformed JSON (400 invalid_request,
 * answered before an unknown id), not merely invalid base64, wherever it falls and however
 * the request is split into network pieces.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readChunkBody } from '../../src/origin/chunk-body.js';
import type { PartWriter } from '../../src/core/ports.js';

class NullWriter implements PartWriter {
  bytesWritten = 0;
  async write(chunk: Buffer) {
    this.bytesWritten += chunk.length;
  }
  async discard() {}
}

async function* pieces(text: string, cuts: number[]): AsyncGenerator<Buffer> {
  const buf = Buffer.from(text, 'latin1');
  let at = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    const end = Math.min(buf.length, Math.max(at, cut));
    if (end > at) yield buf.subarray(at, end);
    at = end;
  }
  if (at < buf.length) yield buf.subarray(at);
}

const parse = (text: string, cuts: number[]) => readChunkBody(pieces(text, cuts), async () => new NullWriter(), 1 << 20);

describe('raw control characters in the chunk body', () => {
  it('are malformed JSON wherever they fall, whatever the split', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 40 }), fc.integer({ min: 0, max: 0x1f }), fc.nat(), fc.array(fc.nat(80), { maxLength: 8 }), fc.boolean(),
        async (data, code, where, cuts, escapedSlash) => {
          let b64 = Buffer.from(data).toString('base64');
          if (escapedSlash) b64 = b64.replace(/\//g, '\\/');
          const at = where % (b64.length + 1);
          const body = b64.slice(0, at) + String.fromCharCode(code) + b64.slice(at);
          await expect(parse(`{"fileId":"x","body":"${body}","partNumber":1}`, cuts)).rejects.toMatchObject({ status: 400, code: 'invalid_request' });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('still leaves other bad characters to invalid_base64', async () => {
    for (const bad of ['YW$jZA==', 'YWJjZA=x', 'YWJjZ', 'YWJj ZA==']) {
      const r = await parse(`{"body":"${bad}"}`, [10]);
      expect(r.invalidBase64, bad).toBe(true);
    }
  });
});
