import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readChunkBody } from '../../src/origin/chunk-body.js';
import type { PartWriter } from '../../src/core/ports.js';

class MemoryWriter implements PartWriter {
  chunks: Buffer[] = [];
  bytesWritten = 0;
  discarded = false;
  async write(chunk: Buffer) {
    this.chunks.push(Buffer.from(chunk));
    this.bytesWritten += chunk.length;
  }
  async discard() {
    this.discarded = true;
  }
  get bytes() {
    return Buffer.concat(this.chunks);
  }
}

async function* pieces(text: string | Buffer, cuts: number[]): AsyncGenerator<Buffer> {
  const buf = Buffer.isBuffer(text) ? text : Buffer.from(text);
  let at = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    const end = Math.min(buf.length, Math.max(at, cut));
    if (end > at) yield buf.subarray(at, end);
    at = end;
  }
  if (at < buf.length) yield buf.subarray(at);
}

async function parse(text: string | Buffer, cuts: number[] = [], limit = 1 << 23) {
  const writer = new MemoryWriter();
  const result = await readChunkBody(pieces(text, cuts), async () => writer, limit);
  return { ...result, writer };
}

describe('streamed chunk body', () => {
  it('decodes the body and keeps the other fields, whatever the split', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 3000 }), fc.array(fc.nat(5000), { maxLength: 40 }), fc.boolean(), fc.boolean(), async (data, cuts, bodyFirst, urlSafe) => {
        let b64 = Buffer.from(data).toString('base64');
        if (urlSafe) b64 = b64.replace(/\+/g, '-').replace(/\//g, '_');
        const rest = '"fileId":"f1","partNumber":3,"nested":{"body":"not this"}';
        const text = bodyFirst ? `{"body":"${b64}",${rest}}` : `{ ${rest} , "body" : "${b64}" }`;
        const r = await parse(text, cuts);
        expect(r.invalidBase64).toBe(false);
        expect(r.writer.bytes.equals(Buffer.from(data))).toBe(true);
        expect(r.fields).toEqual({ body: '', fileId: 'f1', partNumber: 3, nested: { body: 'not this' } });
      }),
      { numRuns: 200 },
    );
  });

  it('decodes a 5 MiB chunk split into network-sized pieces', async () => {
    const data = randomBytes(5 * 1024 * 1024);
    const text = `{"fileId":"x","body":"${data.toString('base64')}"}`;
    const cuts = Array.from({ length: 200 }, (_, i) => i * 65536 + 17);
    const r = await parse(text, cuts);
    expect(r.writer.bytes.equals(data)).toBe(true);
  });

  it('accepts JSON escapes inside the base64 text and an escaped key', async () => {
    const r = await parse('{"bo\\u0064y":"aGVs\\/G8\\u0041"}', [5, 9, 14, 20]);
    expect(r.invalidBase64).toBe(false);
    expect(r.writer.bytes.equals(Buffer.from('aGVs/G8A', 'base64'))).toBe(true);
  });

  it('flags text that is not base64', async () => {
    for (const bad of ['aGVs$G8=', 'aGVs bG8=', 'a', 'aG=Vs', 'aGVsbG8===', 'aGVs\\nbG8=', 'é']) {
      const r = await parse(JSON.stringify({ body: bad }));
      expect(r.invalidBase64, bad).toBe(true);
    }
  });

  it('accepts unpadded and padded endings', async () => {
    for (const [text, expected] of [['aGVsbG8', 'hello'], ['aGVsbG8=', 'hello'], ['aGk', 'hi'], ['aGk=', 'hi'], ['', '']] as const) {
      const r = await parse(JSON.stringify({ body: text }));
      expect(r.invalidBase64).toBe(false);
      expect(r.writer.bytes.toString()).toBe(expected);
    }
  });

  it('refuses malformed JSON and discards what was written', async () => {
    for (const bad of ['{"body":"aGk=', '{"body":"aGk="', '{"body":"aGk=",}', 'nope', '{"body":"aG\u0001k="}', '{"body":"aGk=","body":"aGk="}']) {
      const writer = new MemoryWriter();
      await expect(readChunkBody(pieces(bad, [3]), async () => writer, 1 << 20)).rejects.toMatchObject({ status: 400, code: 'invalid_request' });
    }
  });

  it('refuses a body over the limit, declared or streamed', async () => {
    const text = JSON.stringify({ body: 'A'.repeat(4000) });
    await expect(parse(text, [100, 200], 1000)).rejects.toMatchObject({ status: 413, code: 'payload_too_large' });
    const writer = new MemoryWriter();
    await expect(readChunkBody(pieces('{}', []), async () => writer, 1000, 5000)).rejects.toMatchObject({ status: 413 });
  });

  it('leaves a body that is not a string to the schema', async () => {
    const r = await parse('{"body":123,"fileId":"a"}');
    expect(r.writer.bytesWritten).toBe(0);
    expect(r.fields).toEqual({ body: 123, fileId: 'a' });
  });
});
