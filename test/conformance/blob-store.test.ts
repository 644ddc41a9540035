/**
 * What every BlobStore must do, run against each adapter: the local disk (a temporary
 * directory) and S3 (s3rver, a real S3-protocol server, see test/helpers/s3.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BlobNotFoundError, UploadGoneError, type BlobStore, type ByteRange, type PartWriter } from '../../src/core/ports.js';
import { FsBlobStore } from '../../src/adapters/blobs/fs.js';
import { S3BlobStore } from '../../src/adapters/blobs/s3.js';
import { parseS3Url } from '../../src/adapters/blobs/s3-url.js';
import { startS3, type TestS3 } from '../helpers/s3.js';
import { sha256 } from '../kit/index.js';

const MiB = 1024 * 1024;
const CHUNK = 5 * MiB;

interface Subject {
  name: string;
  open(): Promise<BlobStore>;
  close(): Promise<void>;
}

let s3: TestS3 | null = null;
let fsRoot: string | null = null;

const subjects: Subject[] = [
  {
    name: 'fs',
    async open() {
      fsRoot = await mkdtemp(join(tmpdir(), 'coffer-blobs-'));
      return FsBlobStore.open(fsRoot);
    },
    async close() {
      if (fsRoot) await rm(fsRoot, { recursive: true, force: true });
    },
  },
  {
    name: 's3 (s3rver)',
    async open() {
      s3 = await startS3();
      return S3BlobStore.open(s3.blobStoreUrl(await s3.createBucket('conformance')));
    },
    async close() {
      await s3?.stop();
    },
  },
];

/** Writes `bytes` in pieces of `piece` bytes, yielding between them so parts interleave. */
async function writeAll(w: PartWriter, bytes: Buffer, piece = MiB): Promise<void> {
  for (let i = 0; i < bytes.length; i += piece) {
    await w.write(bytes.subarray(i, i + piece));
    await new Promise((r) => setImmediate(r));
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe.each(subjects)('BlobStore conformance: $name', (subject) => {
  let store: BlobStore;
  let n = 0;
  const newKey = () => `files/conf-${process.pid}-${++n}`;

  beforeAll(async () => {
    store = await subject.open();
  });
  afterAll(async () => {
    await store?.close();
    await subject.close();
  });

  async function putPart(key: string, uploadId: string, partNumber: number, bytes: Buffer, piece?: number): Promise<string> {
    const w = await store.openPart(key, uploadId, partNumber, bytes.length);
    await writeAll(w, bytes, piece);
    const part = await store.commitPart(key, uploadId, partNumber, w);
    await part.durable;
    expect(part.size).toBe(bytes.length);
    return part.etag;
  }

  async function upload(bytes: Buffer): Promise<{ key: string; uploadId: string; digest: { size: number; sha256: string } }> {
    const key = newKey();
    const { uploadId } = await store.createMultipart(key);
    const parts: Array<{ partNumber: number; etag: string }> = [];
    for (let i = 0, p = 1; i === 0 || i < bytes.length; i += CHUNK, p++) {
      parts.push({ partNumber: p, etag: await putPart(key, uploadId, p, bytes.subarray(i, i + CHUNK)) });
    }
    return { key, uploadId, digest: await store.completeMultipart(key, uploadId, parts) };
  }

  it('names its bucket and gives each multipart upload its own id', async () => {
    expect(store.bucket).toMatch(/\S/);
    const key = newKey();
    const a = await store.createMultipart(key);
    const b = await store.createMultipart(newKey());
    expect(a.uploadId).toBeTruthy();
    expect(a.uploadId).not.toBe(b.uploadId);
    await store.abortMultipart(key, a.uploadId);
  });

  it('takes parts in any order and in parallel, and joins them in order with the exact size and SHA-256', async () => {
    const bytes = randomBytes(2 * CHUNK + 12_345);
    const key = newKey();
    const { uploadId } = await store.createMultipart(key);
    const pieces = [1, 2, 3].map((p) => bytes.subarray((p - 1) * CHUNK, p * CHUNK));
    // Last part first, all three streaming at once in interleaved pieces of odd sizes.
    const etags = await Promise.all([3, 2, 1].map((p) => putPart(key, uploadId, p, pieces[p - 1]!, 300_001)));
    const parts = [3, 2, 1].map((p, i) => ({ partNumber: p, etag: etags[i]! }));
    const digest = await store.completeMultipart(key, uploadId, parts);
    expect(digest).toEqual({ size: bytes.length, sha256: sha256(bytes) });
    expect(await store.size(key)).toBe(bytes.length);
    expect(sha256(await readAll(await store.read(key)))).toBe(sha256(bytes));
    await store.abortMultipart(key, uploadId);
  });

  it('replaces a part sent again', async () => {
    const key = newKey();
    const { uploadId } = await store.createMultipart(key);
    const first = randomBytes(CHUNK);
    const second = randomBytes(CHUNK);
    const last = randomBytes(777);
    const old = await putPart(key, uploadId, 1, first);
    const tail = await putPart(key, uploadId, 2, last);
    const replaced = await putPart(key, uploadId, 1, second);
    expect(replaced).not.toBe(old);
    await store.dropPart(key, uploadId, 1, old);
    const digest = await store.completeMultipart(key, uploadId, [{ partNumber: 1, etag: replaced }, { partNumber: 2, etag: tail }]);
    const expected = Buffer.concat([second, last]);
    expect(digest).toEqual({ size: expected.length, sha256: sha256(expected) });
    expect((await readAll(await store.read(key))).equals(expected)).toBe(true);
  });

  it('keeps the SHA-256 exact whatever order versions of parts arrive in', async () => {
    const key = newKey();
    const { uploadId } = await store.createMultipart(key);
    // Every part but the last is 5 MiB, as S3 requires of parts it joins.
    const versions = new Map<string, Buffer>();
    const v = (p: number, k: number) => {
      if (!versions.has(`${p}:${k}`)) versions.set(`${p}:${k}`, randomBytes(p === 3 ? 40 : CHUNK));
      return versions.get(`${p}:${k}`)!;
    };
    const plan: Array<[number, number]> = [[1, 0], [2, 0], [1, 1], [3, 0], [2, 1], [3, 1], [1, 2]];
    const latest = new Map<number, { etag: string; bytes: Buffer }>();
    for (const [p, k] of plan) {
      const bytes = v(p, k);
      const previous = latest.get(p);
      latest.set(p, { etag: await putPart(key, uploadId, p, bytes), bytes });
      if (previous && previous.etag !== latest.get(p)!.etag) await store.dropPart(key, uploadId, p, previous.etag);
    }
    const parts = [...latest.entries()].map(([partNumber, x]) => ({ partNumber, etag: x.etag }));
    const expected = Buffer.concat([1, 2, 3].map((p) => latest.get(p)!.bytes));
    expect(await store.completeMultipart(key, uploadId, parts)).toEqual({ size: expected.length, sha256: sha256(expected) });
  });

  it('refuses to commit a part of another size than it was opened for, and keeps nothing of it', async () => {
    const key = newKey();
    const { uploadId } = await store.createMultipart(key);
    for (const wrong of [99, 101]) {
      const w = await store.openPart(key, uploadId, 1, 100);
      await w.write(randomBytes(wrong));
      // The service checks the size first; a store that is asked anyway must not store it.
      if (subject.name !== 'fs') await expect(store.commitPart(key, uploadId, 1, w)).rejects.toThrow();
      await w.discard();
      await w.discard();
    }
    const bytes = randomBytes(100);
    const etag = await putPart(key, uploadId, 1, bytes);
    expect(await store.completeMultipart(key, uploadId, [{ partNumber: 1, etag }])).toEqual({ size: 100, sha256: sha256(bytes) });
  });

  it('keeps nothing of a part that was written whole but discarded', async () => {
    const key = newKey();
    const { uploadId } = await store.createMultipart(key);
    const kept = randomBytes(CHUNK);
    const etag = await putPart(key, uploadId, 1, kept);
    // The same part number sent again, written whole, then discarded.
    const w = await store.openPart(key, uploadId, 1, CHUNK);
    await writeAll(w, randomBytes(CHUNK));
    await new Promise((r) => setTimeout(r, 50));
    await w.discard();
    // A part number never committed: written whole, then discarded.
    const w2 = await store.openPart(key, uploadId, 2, 1000);
    await w2.write(randomBytes(1000));
    await new Promise((r) => setTimeout(r, 50));
    await w2.discard();
    expect(await store.completeMultipart(key, uploadId, [{ partNumber: 1, etag }])).toEqual({ size: CHUNK, sha256: sha256(kept) });
  });

  it('stores a 0-byte object from one empty part', async () => {
    const { key, digest } = await upload(Buffer.alloc(0));
    expect(digest).toEqual({ size: 0, sha256: sha256(Buffer.alloc(0)) });
    expect(await store.size(key)).toBe(0);
    expect((await readAll(await store.read(key))).length).toBe(0);
  });

  it('takes a single part larger than 5 MiB', async () => {
    const bytes = randomBytes(7 * MiB + 3);
    const key = newKey();
    const { uploadId } = await store.createMultipart(key);
    const etag = await putPart(key, uploadId, 1, bytes, 2 * MiB);
    const digest = await store.completeMultipart(key, uploadId, [{ partNumber: 1, etag }]);
    expect(digest).toEqual({ size: bytes.length, sha256: sha256(bytes) });
    expect(await store.size(key)).toBe(bytes.length);
  });

  it('completes again with the same digest, also once the upload itself is cleared', async () => {
    const bytes = randomBytes(CHUNK + 10);
    const { key, uploadId, digest } = await upload(bytes);
    const parts = [{ partNumber: 1, etag: 'x' }, { partNumber: 2, etag: 'y' }];
    await store.abortMultipart(key, uploadId);
    expect(await store.completeMultipart(key, uploadId, parts)).toEqual(digest);
    expect(digest).toEqual({ size: bytes.length, sha256: sha256(bytes) });
  });

  it('aborts: the upload and its parts are gone, and aborting again is no error', async () => {
    const key = newKey();
    const { uploadId } = await store.createMultipart(key);
    const etag = await putPart(key, uploadId, 1, randomBytes(1000));
    const open = await store.openPart(key, uploadId, 2, 10);
    await store.abortMultipart(key, uploadId);
    await store.abortMultipart(key, uploadId);
    await open.write(randomBytes(10));
    await expect(store.commitPart(key, uploadId, 2, open)).rejects.toBeInstanceOf(UploadGoneError);
    await expect(store.completeMultipart(key, uploadId, [{ partNumber: 1, etag }])).rejects.toBeInstanceOf(UploadGoneError);
    expect(await store.size(key)).toBeNull();
  });

  it('reads the whole object and any range of it', async () => {
    const bytes = randomBytes(CHUNK + 4096);
    const { key } = await upload(bytes);
    const cases: ByteRange[] = [
      { start: 0, end: 0 }, // first byte
      { start: bytes.length - 1, end: bytes.length - 1 }, // last byte
      { start: CHUNK - 10, end: CHUNK + 9 }, // across the parts' boundary
      { start: 1000, end: 1999 }, // middle of a part
      { start: 0, end: bytes.length - 1 }, // all of it
    ];
    for (const r of cases) {
      const got = await readAll(await store.read(key, r));
      expect(got.equals(bytes.subarray(r.start, r.end + 1)), `${r.start}-${r.end}`).toBe(true);
    }
    expect((await readAll(await store.read(key))).equals(bytes)).toBe(true);
  });

  it('answers null for the size of a missing object, and BlobNotFoundError for reading it, deleted or never there', async () => {
    expect(await store.size('files/never-there')).toBeNull();
    const never = await store.read('files/never-there').catch((err: unknown) => err);
    expect(never).toBeInstanceOf(BlobNotFoundError);
    expect(never).toMatchObject({ key: 'files/never-there', code: 'blob_not_found' });
    const key = 'files/gone-again';
    await store.putObject(key, [Buffer.from('soon gone')]);
    await store.delete(key);
    await expect(store.read(key)).rejects.toBeInstanceOf(BlobNotFoundError);
    await expect(store.read(key, { start: 0, end: 3 })).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it('deletes, and deleting again or deleting nothing is no error', async () => {
    const { key } = await upload(randomBytes(10));
    expect(await store.size(key)).toBe(10);
    await store.delete(key);
    await store.delete(key);
    await store.delete('files/never-there');
    expect(await store.size(key)).toBeNull();
  });

  it('puts a small object whole from pieces, reads it like any other, replaces and deletes it', async () => {
    const key = `tus-tails/conf-${process.pid}-${++n}/a`;
    const pieces = [randomBytes(1), randomBytes(MiB + 3), randomBytes(0), randomBytes(4 * MiB - 7)];
    const whole = Buffer.concat(pieces);
    await store.putObject(key, pieces);
    expect(await store.size(key)).toBe(whole.length);
    expect(sha256(await readAll(await store.read(key)))).toBe(sha256(whole));
    expect(await readAll(await store.read(key, { start: MiB, end: MiB + 9 }))).toEqual(whole.subarray(MiB, MiB + 10));
    const next = randomBytes(100);
    await store.putObject(key, [next]);
    expect(await readAll(await store.read(key))).toEqual(next);
    await store.putObject(key, []);
    expect(await store.size(key)).toBe(0);
    expect((await readAll(await store.read(key))).length).toBe(0);
    await store.delete(key);
    expect(await store.size(key)).toBeNull();
  });
});

describe('S3 adapter specifics', () => {
  let server: TestS3;
  let store: S3BlobStore;
  let bucket: string;
  beforeAll(async () => {
    server = await startS3();
    bucket = await server.createBucket('specifics');
    store = await S3BlobStore.open(server.blobStoreUrl(bucket));
  });
  afterAll(async () => {
    await store?.close();
    await server?.stop();
  });

  it('reads COFFER_BLOB_STORE and says what is wrong with a bad one', () => {
    expect(parseS3Url('s3://my-bucket?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=us-east-1&force_path_style=true')).toEqual({
      bucket: 'my-bucket', endpoint: 'http://127.0.0.1:9000', region: 'us-east-1', forcePathStyle: true,
    });
    expect(parseS3Url('s3://my-bucket?endpoint=http://minio:9000')).toEqual({ bucket: 'my-bucket', endpoint: 'http://minio:9000', forcePathStyle: false });
    expect(parseS3Url('s3://my-bucket')).toEqual({ bucket: 'my-bucket', forcePathStyle: false });
    expect(() => parseS3Url('http://my-bucket')).toThrow(/scheme must be s3:\/\//);
    expect(() => parseS3Url('s3://ab')).toThrow(/not a bucket name/);
    expect(() => parseS3Url('s3://key:secret@my-bucket')).toThrow(/AWS_ACCESS_KEY_ID/);
    expect(() => parseS3Url('s3://my-bucket?endpiont=http://x')).toThrow(/unknown parameter "endpiont"/);
    expect(() => parseS3Url('s3://my-bucket?endpoint=ftp://x')).toThrow(/http:\/\/ or https:\/\//);
    expect(() => parseS3Url('s3://my-bucket?force_path_style=yes')).toThrow(/force_path_style/);
    expect(() => parseS3Url('s3://my-bucket/prefix')).toThrow(/prefix/);
    expect(() => parseS3Url('not a url')).toThrow(/not a URL/);
  });

  it('refuses to start on a bucket that does not exist, naming it', async () => {
    await expect(S3BlobStore.open(server.blobStoreUrl('no-such-bucket-here'))).rejects.toThrow(/"no-such-bucket-here" cannot be used: it does not exist/);
  });

  it('holds back the last byte of a part until commit, so S3 never has a part the service refused', async () => {
    const key = 'files/held-back';
    const { uploadId } = await store.createMultipart(key);
    const w = await store.openPart(key, uploadId, 1, 300_000);
    await w.write(randomBytes(300_000));
    // The server stores a part (BUCKET/._S3rver_uploads/UPLOAD_ID/1) only once its whole body is in.
    const dir = join(server.directory, bucket, '._S3rver_uploads', uploadId);
    await new Promise((r) => setTimeout(r, 100));
    expect(await readdir(dir)).not.toContain('1');
    const part = await store.commitPart(key, uploadId, 1, w);
    expect(await readdir(dir)).toContain('1');
    expect((await stat(join(dir, '1'))).size).toBe(300_000);
    expect(part.etag).toMatch(/^[0-9a-f]{32}$/);
    await store.abortMultipart(key, uploadId);
    expect(await server.openUploads(bucket)).toEqual([]);
  });

  it('reads back at complete only what it did not hash while the parts streamed in order', async () => {
    const reads: Array<ByteRange | undefined> = [];
    const spy = vi.spyOn(store, 'read').mockImplementation(async function (this: S3BlobStore, key: string, range?: ByteRange) {
      reads.push(range);
      return S3BlobStore.prototype.read.call(this, key, range);
    });
    try {
      const parts = [randomBytes(CHUNK), randomBytes(CHUNK), randomBytes(999)];
      const whole = Buffer.concat(parts);
      const run = async (order: number[], resend: number[] = []) => {
        const key = `files/order-${order.join('')}-${resend.join('')}`;
        const { uploadId } = await store.createMultipart(key);
        const etags = new Map<number, string>();
        for (const p of [...order, ...resend]) {
          const w = await store.openPart(key, uploadId, p, parts[p - 1]!.length);
          await w.write(parts[p - 1]!);
          etags.set(p, (await store.commitPart(key, uploadId, p, w)).etag);
        }
        reads.length = 0;
        const digest = await store.completeMultipart(key, uploadId, [...etags].map(([partNumber, etag]) => ({ partNumber, etag })));
        expect(digest).toEqual({ size: whole.length, sha256: sha256(whole) });
        return reads.map((r) => r?.start);
      };
      expect(await run([1, 2, 3])).toEqual([]);
      expect(await run([2, 1, 3])).toEqual([CHUNK]);
      expect(await run([1, 2, 3], [2])).toEqual([CHUNK]);
      expect(await run([3, 2, 1])).toEqual([CHUNK]);
    } finally {
      spy.mockRestore();
    }
  });

  it('completes with the version S3 holds when the recorded ETag of a part is an older one', async () => {
    const key = 'files/stale-etag';
    const { uploadId } = await store.createMultipart(key);
    const put = async (p: number, bytes: Buffer) => {
      const w = await store.openPart(key, uploadId, p, bytes.length);
      await w.write(bytes);
      return (await store.commitPart(key, uploadId, p, w)).etag;
    };
    const a = randomBytes(CHUNK);
    const b = randomBytes(CHUNK);
    const last = randomBytes(10);
    const stale = await put(1, a);
    await put(1, b); // S3 now holds b; the caller still lists a's ETag
    const tail = await put(2, last);
    const whole = Buffer.concat([b, last]);
    expect(await store.completeMultipart(key, uploadId, [{ partNumber: 1, etag: stale }, { partNumber: 2, etag: tail }]))
      .toEqual({ size: whole.length, sha256: sha256(whole) });
  });

  it('does not complete over a part S3 does not have', async () => {
    const key = 'files/missing-part';
    const { uploadId } = await store.createMultipart(key);
    const w = await store.openPart(key, uploadId, 1, 10);
    await w.write(randomBytes(10));
    const etag = (await store.commitPart(key, uploadId, 1, w)).etag;
    await expect(store.completeMultipart(key, uploadId, [{ partNumber: 1, etag }, { partNumber: 2, etag }])).rejects.toMatchObject({ name: 'InvalidPart' });
    await store.abortMultipart(key, uploadId);
  });

  it('lists an open upload until it is aborted (ListMultipartUploads)', async () => {
    const key = 'files/listed';
    const { uploadId } = await store.createMultipart(key);
    expect(await server.openUploads(bucket)).toContainEqual({ key, uploadId });
    await store.abortMultipart(key, uploadId);
    expect((await server.openUploads(bucket)).map((u) => u.uploadId)).not.toContain(uploadId);
  });
});
