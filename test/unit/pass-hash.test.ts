/**
 * SHA-256 taken as parts pass (src/adapters/blobs/pass-hash.ts) in the disk store: parts that
 * come in order are hashed on their way and never read back; whatever comes otherwise (ahead
 * of order, sent again, written before its number was known, cut off) still ends in the digest
 * of exactly the bytes joined.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { FsBlobStore } from '../../src/adapters/blobs/fs.js';
import { FileHasher } from '../../src/adapters/blobs/file-hasher.js';
import { PassHash } from '../../src/adapters/blobs/pass-hash.js';
import { sha256 } from '../kit/index.js';

const PART = 64 * 1024;

describe('PassHash', () => {
  it('vouches for the prefix of parts hashed in order, by version', () => {
    const pass = new PassHash();
    const bytes = [randomBytes(10), randomBytes(20), randomBytes(30)];
    const writers = bytes.map(() => ({}));
    bytes.forEach((b, i) => {
      const hash = pass.claim(i + 1, writers[i]!)!;
      hash.update(b);
      expect(pass.committed(writers[i]!, hash, i + 1, `e${i + 1}`, b.length)).toBe(true);
    });
    const all = pass.prefix([{ partNumber: 1, etag: 'e1' }, { partNumber: 2, etag: 'e2' }, { partNumber: 3, etag: 'e3' }]);
    expect(all.sizes).toEqual([10, 20, 30]);
    expect(all.hash.digest('hex')).toBe(sha256(Buffer.concat(bytes)));
    const two = pass.prefix([{ partNumber: 1, etag: 'e1' }, { partNumber: 2, etag: 'e2' }, { partNumber: 3, etag: 'other' }]);
    expect(two.sizes).toEqual([10, 20]);
    expect(two.hash.digest('hex')).toBe(sha256(Buffer.concat(bytes.slice(0, 2))));
    expect(pass.prefix([{ partNumber: 2, etag: 'e2' }]).sizes).toEqual([]);
  });

  it('takes one part at a time, only the next, and starts over from a part sent again', () => {
    const pass = new PassHash();
    const a = {};
    const hash = pass.claim(1, a)!;
    expect(pass.claim(2, {})).toBeNull();
    expect(pass.claim(1, {})).toBeNull();
    pass.release(a);
    expect(pass.claim(3, {})).toBeNull();
    const b = {};
    const again = pass.claim(1, b)!;
    again.update(Buffer.from('x'));
    expect(pass.committed(a, hash, 1, 'stale', 0)).toBe(false);
    expect(pass.committed(b, again, 1, 'e1', 1)).toBe(true);
    const c = {};
    const replaced = pass.claim(1, c)!;
    replaced.update(Buffer.from('y'));
    expect(pass.committed(c, replaced, 1, 'e1b', 1)).toBe(true);
    expect(pass.prefix([{ partNumber: 1, etag: 'e1b' }]).hash.digest('hex')).toBe(sha256(Buffer.from('y')));
  });
});

describe('the disk store hashing parts as they pass', () => {
  let root: string;
  let store: FsBlobStore;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'coffer-pass-hash-'));
    store = await FsBlobStore.open(root);
  });
  afterAll(async () => {
    await store.close();
    await rm(root, { recursive: true, force: true });
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  async function send(key: string, uploadId: string, n: number, bytes: Buffer, unnamed = false): Promise<{ partNumber: number; etag: string }> {
    const writer = unnamed ? await store.openUnnamedPart() : await store.openPart(key, uploadId, n, bytes.length);
    for (let i = 0; i < bytes.length; i += 10_000) await writer.write(bytes.subarray(i, i + 10_000));
    const part = await store.commitPart(key, uploadId, n, writer);
    await part.durable;
    return { partNumber: n, etag: part.etag };
  }

  it('reads nothing back for parts sent in order, a cut-off part written again included', async () => {
    const readBack = vi.spyOn(FileHasher.prototype, 'update');
    const key = 'files/in-order';
    const { uploadId } = await store.createMultipart(key);
    const bytes = [randomBytes(PART), randomBytes(PART), randomBytes(PART / 2)];
    const parts = [await send(key, uploadId, 1, bytes[0]!)];
    const cut = await store.openPart(key, uploadId, 2, PART);
    await cut.write(randomBytes(1000));
    await cut.discard();
    parts.push(await send(key, uploadId, 2, bytes[1]!), await send(key, uploadId, 3, bytes[2]!));
    const digest = await store.completeMultipart(key, uploadId, parts);
    expect(digest).toEqual({ size: 2.5 * PART, sha256: sha256(Buffer.concat(bytes)) });
    expect(readBack).not.toHaveBeenCalled();
  });

  it('joins the right bytes when parts come ahead of order, again, or before their number', async () => {
    const key = 'files/any-order';
    const { uploadId } = await store.createMultipart(key);
    const bytes = [randomBytes(PART), randomBytes(PART), randomBytes(PART), randomBytes(100)];
    const first = await send(key, uploadId, 1, randomBytes(PART));
    const parts = new Map([[1, first]]);
    parts.set(3, await send(key, uploadId, 3, bytes[2]!));
    parts.set(1, await send(key, uploadId, 1, bytes[0]!));
    parts.set(2, await send(key, uploadId, 2, bytes[1]!, true));
    parts.set(4, await send(key, uploadId, 4, bytes[3]!));
    const digest = await store.completeMultipart(key, uploadId, [1, 2, 3, 4].map((n) => parts.get(n)!));
    expect(digest).toEqual({ size: 3 * PART + 100, sha256: sha256(Buffer.concat(bytes)) });
  });

  it('starts over from a part sent again in order, and reads back only what it cannot vouch for', async () => {
    const key = 'files/again';
    const { uploadId } = await store.createMultipart(key);
    const bytes = [randomBytes(PART), randomBytes(PART), randomBytes(PART)];
    await send(key, uploadId, 1, bytes[0]!);
    await send(key, uploadId, 2, randomBytes(PART));
    const parts = [await send(key, uploadId, 1, bytes[0]!), await send(key, uploadId, 2, bytes[1]!), await send(key, uploadId, 3, bytes[2]!)];
    expect(await store.completeMultipart(key, uploadId, parts)).toEqual({ size: 3 * PART, sha256: sha256(Buffer.concat(bytes)) });
  });
});
