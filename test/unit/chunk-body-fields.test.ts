/**
 * The chunk body reader tells the writer's opener the fields that came before `body`, so
 * the part can be opened where it belongs (S3's UploadPart) before its bytes arrive.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readChunkBody } from '../../src/origin/chunk-body.js';
import type { PartWriter } from '../../src/core/ports.js';

class CountingWriter implements PartWriter {
  bytesWritten = 0;
  async write(chunk: Buffer) {
    this.bytesWritten += chunk.length;
  }
  async discard() {}
}

async function* pieces(text: string, cuts: number[]): AsyncGenerator<Buffer> {
  const buf = Buffer.from(text);
  let at = 0;
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
    if (cut > at && cut < buf.length) {
      yield buf.subarray(at, cut);
      at = cut;
    }
  }
  yield buf.subarray(at);
}

async function fieldsSeen(text: string, cuts: number[] = []): Promise<Record<string, unknown> | null | 'never opened'> {
  let seen: Record<string, unknown> | null | 'never opened' = 'never opened';
  await readChunkBody(pieces(text, cuts), async (fields) => {
    seen = fields;
    return new CountingWriter();
  }, 1 << 20).catch(() => undefined);
  return seen;
}

const session = { bucket: 'local', key: 'files/abc', uploadId: 'u-1', fileId: 'abc', partNumber: 2 };

describe('the fields before "body"', () => {
  it('are handed over whole when they come first, however the request is cut', async () => {
    const text = JSON.stringify({ ...session, body: 'QUJD' });
    await fc.assert(fc.asyncProperty(fc.array(fc.nat({ max: text.length }), { maxLength: 6 }), async (cuts) => {
      expect(await fieldsSeen(text, cuts)).toEqual({ ...session, body: '' });
    }));
  });

  it('are only those before it when "body" comes first or in the middle', async () => {
    expect(await fieldsSeen(`{"body":"QUJD","bucket":"local","key":"files/abc"}`)).toEqual({ body: '' });
    expect(await fieldsSeen(`{"bucket":"local", "key" : "files/abc" ,"body":"QUJD","partNumber":2}`)).toEqual({ bucket: 'local', key: 'files/abc', body: '' });
  });

  it('keep escapes and nesting as JSON has them', async () => {
    expect(await fieldsSeen(`{"key":"files\\/a\\"b","x":{"body":"no"},"y":[1,{"z":"}"}],"body":""}`))
      .toEqual({ key: 'files/a"b', x: { body: 'no' }, y: [1, { z: '}' }], body: '' });
  });

  it('are null when the text before "body" is not the start of a JSON object', async () => {
    expect(await fieldsSeen(`{"bucket":01,"body":"QUJD"}`)).toBeNull();
    expect(await fieldsSeen(`{"bucket":"a" "key":"b","body":"QUJD"}`)).toBeNull();
  });

  it('are not asked for when there is no "body" string', async () => {
    expect(await fieldsSeen(JSON.stringify(session))).toBe('never opened');
  });
});
