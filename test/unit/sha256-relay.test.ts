/**
 * One SHA-256 for S3's signed payload and the disk store (src/core/sha256-relay.ts,
 * src/adapters/blobs/part-hash.ts): a store writing the runs a body's relay hashed, in order
 * from the first byte, takes the relay's state and hashes none of them again; anything else
 * (another body's runs, a slice, bytes of its own) still ends in the digest of exactly the
 * bytes joined, hashed by the store or read back.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Sha256Relay, relayOf } from '../../src/core/sha256-relay.js';
import { FsBlobStore } from '../../src/adapters/blobs/fs.js';
import { PartHash } from '../../src/adapters/blobs/part-hash.js';
import { sha256 } from '../kit/index.js';

const RUN = 64 * 1024;

/** Counts the bytes every SHA-256 (and other Node hash) in this process is fed. */
function countHashedBytes(): { bytes: () => number } {
  let total = 0;
  const proto = Object.getPrototypeOf(createHash('sha256')) as { update: (data: Buffer) => unknown };
  const original = proto.update;
  vi.spyOn(proto, 'update').mockImplementation(function (this: unknown, data: Buffer) {
    total += data.length;
    return original.call(this, data);
  });
  return { bytes: () => total };
}

describe('Sha256Relay', () => {
  it('marks each run with where it starts, and answers its state only where it stands', () => {
    const relay = new Sha256Relay();
    const a = relay.pass(randomBytes(10));
    const b = relay.pass(randomBytes(20));
    expect(relayOf(a)).toEqual({ relay, start: 0 });
    expect(relayOf(b)).toEqual({ relay, start: 10 });
    expect(relayOf(b.subarray(0, 5))).toBeNull();
    expect(relay.stateAt(10)).toBeNull();
    expect(relay.stateAt(30)!.digest('hex')).toBe(sha256(Buffer.concat([a, b])));
    expect(relay.hex()).toBe(sha256(Buffer.concat([a, b])));
  });

  it('a part hash follows runs in order, then hashes for itself from the relay state', () => {
    const relay = new Sha256Relay();
    const runs = [relay.pass(randomBytes(RUN)), relay.pass(randomBytes(RUN))];
    const part = new PartHash(createHash('sha256'), { relay: null, offset: 0 });
    for (const run of runs) expect(part.update(run)).toBe(true);
    const own = randomBytes(100);
    expect(part.update(own)).toBe(true);
    expect(part.finish()!.hash.digest('hex')).toBe(sha256(Buffer.concat([...runs, own])));
  });

  it('a part hash gives up when the relay went past what it followed, and never follows another body', () => {
    const relay = new Sha256Relay();
    const run = relay.pass(randomBytes(RUN));
    const part = new PartHash(createHash('sha256'), { relay: null, offset: 0 });
    expect(part.update(run.subarray(0, 10))).toBe(true); // nothing followed yet: its own state is exact
    expect(part.update(run.subarray(10))).toBe(true);
    expect(part.finish()!.hash.digest('hex')).toBe(sha256(run));

    const other = new Sha256Relay();
    const first = other.pass(randomBytes(RUN));
    other.pass(randomBytes(RUN));
    const behind = new PartHash(createHash('sha256'), { relay: null, offset: 0 });
    expect(behind.update(first)).toBe(true);
    expect(behind.update(randomBytes(5))).toBe(false);

    const third = new Sha256Relay();
    const mid = new PartHash(createHash('sha256').update(first), { relay: other, offset: RUN });
    expect(mid.update(third.pass(randomBytes(10)))).toBe(true);
    expect(mid.finish()!.point).toBeNull();
  });
});

describe('the disk store taking a relay\'s hash', () => {
  let root: string;
  let store: FsBlobStore;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'coffer-relay-'));
    store = await FsBlobStore.open(root);
  });
  afterAll(async () => {
    await store.close();
    await rm(root, { recursive: true, force: true });
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  async function send(key: string, uploadId: string, n: number, runs: Buffer[]): Promise<{ partNumber: number; etag: string }> {
    const writer = await store.openPart(key, uploadId, n, runs.reduce((s, r) => s + r.length, 0));
    for (const run of runs) await writer.write(run);
    const part = await store.commitPart(key, uploadId, n, writer);
    await part.durable;
    return { partNumber: n, etag: part.etag };
  }

  it('hashes each byte once when one body\'s runs fill the parts in order (S3 PutObject)', async () => {
    const bytes = Array.from({ length: 7 }, () => randomBytes(RUN));
    const key = 'files/relayed';
    const { uploadId } = await store.createMultipart(key);
    const counter = countHashedBytes();
    const relay = new Sha256Relay();
    const runs = bytes.map((b) => relay.pass(b));
    const parts = [await send(key, uploadId, 1, runs.slice(0, 3)), await send(key, uploadId, 2, runs.slice(3, 6)), await send(key, uploadId, 3, runs.slice(6))];
    const digest = await store.completeMultipart(key, uploadId, parts);
    // The relay's pass and nothing else: 7 runs, not 14.
    expect(counter.bytes()).toBe(7 * RUN);
    expect(digest).toEqual({ size: 7 * RUN, sha256: sha256(Buffer.concat(bytes)) });
    expect(relay.hex()).toBe(digest.sha256);
  });

  it('still joins the right digest when parts come from different bodies or bytes of its own (S3 UploadPart)', async () => {
    const bytes = [randomBytes(RUN), randomBytes(RUN), randomBytes(RUN), randomBytes(100)];
    const key = 'files/mixed';
    const { uploadId } = await store.createMultipart(key);
    const one = new Sha256Relay();
    const two = new Sha256Relay();
    const parts = [
      await send(key, uploadId, 1, [one.pass(bytes[0]!)]),
      await send(key, uploadId, 2, [two.pass(bytes[1]!)]),
      await send(key, uploadId, 3, [bytes[2]!]),
      await send(key, uploadId, 4, [bytes[3]!]),
    ];
    expect(await store.completeMultipart(key, uploadId, parts)).toEqual({ size: 3 * RUN + 100, sha256: sha256(Buffer.concat(bytes)) });
  });

  it('reads back what a relay ran ahead of: a run cut by its consumer', async () => {
    const bytes = [randomBytes(RUN), randomBytes(RUN)];
    const key = 'files/cut';
    const { uploadId } = await store.createMultipart(key);
    const relay = new Sha256Relay();
    const runs = bytes.map((b) => relay.pass(b));
    const parts = [
      await send(key, uploadId, 1, [runs[0]!, runs[1]!.subarray(0, 1000)]),
      await send(key, uploadId, 2, [runs[1]!.subarray(1000)]),
    ];
    expect(await store.completeMultipart(key, uploadId, parts)).toEqual({ size: 2 * RUN, sha256: sha256(Buffer.concat(bytes)) });
  });
});
