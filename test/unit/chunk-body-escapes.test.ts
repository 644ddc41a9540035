/**
 * The base64 text of "body" may be written with JSON escapes (`\uXXXX`, `\/`). They decode to
 * the same bytes as the plain text, mixed with it anywhere and split anywhere. The time a body
 * made only of escapes takes is printed, not asserted (machines differ).
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readChunkBody } from '../../src/origin/chunk-body.js';
import type { PartWriter } from '../../src/core/ports.js';

class MemoryWriter implements PartWriter {
  chunks: Buffer[] = [];
  bytesWritten = 0;
  async write(chunk: Buffer) {
    this.chunks.push(Buffer.from(chunk));
    this.bytesWritten += chunk.length;
  }
  async discard() {}
  get bytes() {
    return Buffer.concat(this.chunks);
  }
}

async function* pieces(buf: Buffer, size: number | number[]): AsyncGenerator<Buffer> {
  if (typeof size === 'number') {
    for (let at = 0; at < buf.length; at += size) yield buf.subarray(at, at + size);
    return;
  }
  let at = 0;
  for (const cut of [...size].sort((a, b) => a - b)) {
    const end = Math.min(buf.length, Math.max(at, cut));
    if (end > at) yield buf.subarray(at, end);
    at = end;
  }
  if (at < buf.length) yield buf.subarray(at);
}

const LIMIT = 8 * 1024 * 1024;
const escape = (c: string, upper: boolean) => {
  const hex = c.charCodeAt(0).toString(16).padStart(4, '0');
  return `\\u${upper ? hex.toUpperCase() : hex}`;
};

async function parse(text: string | Buffer, split: number | number[]) {
  const writer = new MemoryWriter();
  const buf = Buffer.isBuffer(text) ? text : Buffer.from(text, 'latin1');
  const result = await readChunkBody(pieces(buf, split), async () => writer, LIMIT);
  return { ...result, writer };
}

describe('escapes in the chunk body', () => {
  it('decodes a body written entirely as \\u00XX escapes to the same bytes', async () => {
    // As large as the 8 MiB limit allows at six characters per base64 character.
    const data = randomBytes(Math.floor((LIMIT - 64) / 6 / 4) * 3);
    const b64 = data.toString('base64');
    const parts: string[] = [];
    for (let i = 0; i < b64.length; i++) parts.push(escape(b64[i]!, i % 2 === 0));
    const text = Buffer.from(`{"fileId":"x","body":"${parts.join('')}"}`, 'latin1');
    expect(text.length).toBeLessThanOrEqual(LIMIT);
    const before = process.cpuUsage();
    const started = performance.now();
    const r = await parse(text, 65536);
    const cpu = process.cpuUsage(before);
    console.log(`${text.length} bytes of escapes: ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms of CPU, ${(performance.now() - started).toFixed(0)} ms`);
    expect(r.invalidBase64).toBe(false);
    expect(r.writer.bytes.equals(data)).toBe(true);
    expect(r.fields).toEqual({ fileId: 'x', body: '' });
  }, 60_000);

  it('decodes escapes mixed with plain text, whatever the split', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 600 }), fc.array(fc.nat(3), { minLength: 1, maxLength: 50 }), fc.array(fc.nat(6000), { maxLength: 30 }),
        async (data, styles, cuts) => {
          const b64 = Buffer.from(data).toString('base64');
          let body = '';
          for (let i = 0; i < b64.length; i++) {
            const c = b64[i]!;
            const style = styles[i % styles.length]!;
            body += style === 0 ? c : style === 3 && c === '/' ? '\\/' : escape(c, style === 1);
          }
          const r = await parse(`{"partNumber":1,"body":"${body}","fileId":"f"}`, cuts);
          expect(r.invalidBase64).toBe(false);
          expect(r.writer.bytes.equals(Buffer.from(data))).toBe(true);
          expect(r.fields).toEqual({ partNumber: 1, body: '', fileId: 'f' });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps telling escapes that are not base64 from escapes that are not JSON', async () => {
    for (const bad of ['\\u00e9', '\\u0000', '\\u2041', '\\n', '\\"', '\\\\']) {
      for (const cut of [[], [24], [25], [26], [27]]) {
        const r = await parse(`{"body":"QUJD${bad}REVG","fileId":"f"}`, cut);
        expect(r.invalidBase64, bad).toBe(true);
      }
    }
    for (const broken of ['\\u00G1', '\\u004', '\\x41', '\\u-041']) {
      await expect(parse(`{"body":"QUJD${broken}REVG","fileId":"f"}`, [25]), broken).rejects.toMatchObject({ status: 400 });
    }
  });
});
