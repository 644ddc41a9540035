/**
 * Property: whatever the part order, duplicates, replacements and concurrency of the
 * sends, a completed upload is exactly the bytes last sent for each part (contract §4).
 */
import { createCipheriv, createHash } from 'node:crypto';
import fc from 'fast-check';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../src/adapters/blobs/fs.js';
import type { PartWriter } from '../../src/core/ports.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { readStoredObject } from '../helpers/stored-object.js';
import { sha256 } from '../kit/index.js';

const C = 5 * 1024 * 1024;
const MAX_SIZE = 3 * C + 1024 * 1024; // three chunks and a remainder: 16 MiB

/** Deterministic, fast pseudo-random bytes: AES-CTR keystream keyed by the label. */
function seededBytes(label: string, length: number): Buffer {
  const key = createHash('sha256').update(label).digest().subarray(0, 16);
  const cipher = createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
  return Buffer.concat([cipher.update(Buffer.alloc(length)), cipher.final()]);
}

/** mulberry32: a small seeded PRNG for the schedule. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const partCount = (size: number): number => Math.max(1, Math.ceil(size / C));
const partSize = (size: number, n: number): number => (n < partCount(size) ? C : size - (partCount(size) - 1) * C);

interface Plan {
  size: number;
  seed: number;
  /** Per part (index = part number − 1): the variants sent, in order; the last one counts. */
  sends: number[][];
  scheduleSeed: number;
  maxBatch: number;
  /** How many complete-upload calls are sent at once (a client retrying). */
  completes: number;
}

const sizeArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(0, 1, C - 1, C, C + 1, 2 * C, 2 * C + 1, 3 * C - 1, 3 * C, MAX_SIZE) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: MAX_SIZE }) },
);

const planArb: fc.Arbitrary<Plan> = sizeArb.chain((size) =>
  fc.record({
    size: fc.constant(size),
    seed: fc.integer({ min: 0, max: 0x7fffffff }),
    // Variant 0..2 per send: repeats are duplicate sends, changes are replacements.
    sends: fc.array(fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 3 }), {
      minLength: partCount(size), maxLength: partCount(size),
    }),
    scheduleSeed: fc.integer({ min: 0, max: 0x7fffffff }),
    maxBatch: fc.integer({ min: 1, max: 4 }),
    completes: fc.integer({ min: 1, max: 3 }),
  }));

interface Send { part: number; variant: number }

/**
 * A random interleaving that keeps each part's sends in their order, cut into batches
 * sent concurrently; a batch never holds two sends of one part, so "last sent" is defined.
 */
function schedule(plan: Plan): Send[][] {
  const rand = prng(plan.scheduleSeed);
  const slots: number[] = plan.sends.flatMap((variants, i) => variants.map(() => i + 1));
  for (let i = slots.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [slots[i], slots[j]] = [slots[j]!, slots[i]!];
  }
  const next = new Map<number, number>();
  const order: Send[] = slots.map((part) => {
    const k = next.get(part) ?? 0;
    next.set(part, k + 1);
    return { part, variant: plan.sends[part - 1]![k]! };
  });
  const batches: Send[][] = [];
  let batch: Send[] = [];
  let limit = 1 + Math.floor(rand() * plan.maxBatch);
  for (const send of order) {
    if (batch.length >= limit || batch.some((s) => s.part === send.part)) {
      batches.push(batch);
      batch = [];
      limit = 1 + Math.floor(rand() * plan.maxBatch);
    }
    batch.push(send);
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

describe('upload property: the completed file is the bytes last sent for each part', () => {
  let o: TestOrigin;
  beforeAll(async () => { o = await startTestOrigin(); });
  afterAll(async () => { await o?.close(); });

  it('holds for random sizes, orders, duplicates, replacements and concurrency', async () => {
    let runs = 0;
    // What the runs exercised, so the property cannot pass vacuously.
    const seen = { replaced: 0, duplicated: 0, concurrent: 0, outOfOrder: 0 };
    await fc.assert(
      fc.asyncProperty(planArb, async (plan) => {
        runs++;
        const count = partCount(plan.size);
        const bytesOf = (part: number, variant: number): Buffer =>
          seededBytes(`${plan.seed}:${part}:${variant}`, partSize(plan.size, part));

        const init = await o.post('/collections/upload/file', { name: 'prop.bin', visibility: 'Private', size: plan.size, file_type: 'other' });
        expect(init.status, JSON.stringify(init.body)).toBe(200);
        const s = init.body;
        expect(s.chunk_size).toBe(C);
        expect(s.part_count).toBe(count);

        const batches = schedule(plan);
        if (plan.sends.some((v) => v.some((x, i) => i > 0 && x !== v[i - 1]))) seen.replaced++;
        if (plan.sends.some((v) => v.some((x, i) => i > 0 && x === v[i - 1]))) seen.duplicated++;
        if (batches.some((b) => b.length > 1)) seen.concurrent++;
        const firstSends = batches.flat().map((b) => b.part).filter((p, i, all) => all.indexOf(p) === i);
        if (firstSends.some((p, i) => i > 0 && p < firstSends[i - 1]!)) seen.outOfOrder++;

        const lastSent = new Map<number, number>();
        for (const batch of batches) {
          const results = await Promise.all(batch.map(async ({ part, variant }) => {
            const r = await o.post('/collections/upload/file-progress', {
              bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: part,
              body: bytesOf(part, variant).toString('base64'),
            });
            return { part, variant, r };
          }));
          for (const { part, variant, r } of results) {
            expect(r.status, `part ${part}: ${JSON.stringify(r.body)}`).toBe(200);
            expect(r.body.partNumber).toBe(part);
            expect(r.body.size).toBe(partSize(plan.size, part));
            lastSent.set(part, variant);
          }
          // Parts received so far are exactly the parts sent so far.
          const st = await o.post('/collections/upload/status', { file_id: s.fileId });
          expect(st.status).toBe(200);
          expect(st.body.status).toBe('uploading');
          const sent = [...lastSent.keys()].sort((a, b) => a - b);
          expect(st.body.received).toEqual(sent);
          expect(st.body.missing).toEqual(Array.from({ length: count }, (_, i) => i + 1).filter((n) => !lastSent.has(n)));
          expect(results.at(-1)!.r.body.received_parts).toBeGreaterThanOrEqual(1);
        }
        expect(lastSent.size).toBe(count);

        const expected = Buffer.concat(Array.from({ length: count }, (_, i) => bytesOf(i + 1, lastSent.get(i + 1)!)));
        expect(expected.length).toBe(plan.size);
        const want = sha256(expected);

        const dones = await Promise.all(Array.from({ length: plan.completes }, () => o.post('/collections/upload/complete-upload', { file_id: s.fileId })));
        for (const done of dones) {
          expect(done.status, JSON.stringify(done.body)).toBe(200);
          expect(done.body.status).toBe('ready');
          expect(done.body.size).toBe(plan.size);
          expect(done.body.sha256).toBe(want);
        }

        const got = await o.post('/collections/file/get', { file_id: s.fileId });
        expect(got.status).toBe(200);
        expect(got.body.sha256).toBe(want);
        expect(got.body.size).toBe(plan.size);

        // The stored object itself, not just the reported digest.
        const onDisk = await readStoredObject(o, s.fileId);
        expect(onDisk.length).toBe(plan.size);
        expect(sha256(onDisk)).toBe(want);

        // Complete is idempotent; a part sent after it is refused.
        const again = await o.post('/collections/upload/complete-upload', { file_id: s.fileId });
        expect(again.status).toBe(200);
        expect(again.body.sha256).toBe(want);
        const late = await o.post('/collections/upload/file-progress', {
          bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: 1,
          body: bytesOf(1, 0).toString('base64'),
        });
        expect(late.status).toBe(409);
        expect(late.body.error.code).toBe('upload_completed');
      }),
      { numRuns: 20, endOnFailure: true },
    );
    expect(runs).toBeGreaterThanOrEqual(20);
    expect(seen.replaced, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.duplicated, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.concurrent, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.outOfOrder, JSON.stringify(seen)).toBeGreaterThan(0);
  }, 120_000);
});

/**
 * The disk store hashes parts while later ones arrive and complete reuses that work; the
 * digest must still be of exactly the versions completed, whatever was replaced while it
 * was being hashed. Parts here are any size (the store does not check), so a large
 * version takes long enough to hash for a replacement to land in the middle.
 */
describe('disk blob store: the digest is of the part versions completed', () => {
  const MiB = 1024 * 1024;
  interface Commit { part: number; size: number; pauseAfter: boolean }
  const commitArb = (part: number) => fc.record({
    part: fc.constant(part),
    size: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(0, 1, 1024, MiB) }, { weight: 2, arbitrary: fc.constant(16 * MiB) }),
    pauseAfter: fc.boolean(),
  });
  /** Per part, its versions in order; then a random interleaving that keeps that order. */
  const planArb = fc.integer({ min: 1, max: 3 }).chain((parts) => fc.record({
    versions: fc.tuple(...Array.from({ length: parts }, (_, i) => fc.array(commitArb(i + 1), { minLength: 1, maxLength: 3 }))),
    shuffleSeed: fc.integer({ min: 0, max: 0x7fffffff }),
  }));

  let root = '';
  let store: FsBlobStore;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'coffer-blobs-'));
    store = await FsBlobStore.open(root);
  });
  afterAll(async () => {
    await store?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('holds when parts are replaced while the running hash reads them', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(planArb, async ({ versions, shuffleSeed }) => {
        const id = ++n;
        const key = `files/prop-${id}`;
        const rand = prng(shuffleSeed);
        const slots = versions.flatMap((v, i) => v.map(() => i + 1));
        for (let i = slots.length - 1; i > 0; i--) {
          const j = Math.floor(rand() * (i + 1));
          [slots[i], slots[j]] = [slots[j]!, slots[i]!];
        }
        const taken = new Map<number, number>();
        const order: Array<Commit & { bytes: Buffer }> = slots.map((part) => {
          const k = taken.get(part) ?? 0;
          taken.set(part, k + 1);
          const c = versions[part - 1]![k]!;
          return { ...c, bytes: seededBytes(`${id}:${part}:${k}`, c.size) };
        });
        // Every body is on disk before the first commit, so commits can follow each other closely.
        const { uploadId } = await store.createMultipart(key);
        const writers: PartWriter[] = [];
        for (const c of order) {
          const w = await store.openPart(key, uploadId, c.part, c.bytes.length);
          await w.write(c.bytes);
          writers.push(w);
        }
        const last = new Map<number, { etag: string; bytes: Buffer }>();
        for (const [i, c] of order.entries()) {
          const { etag } = await store.commitPart(key, uploadId, c.part, writers[i]!);
          last.set(c.part, { etag, bytes: c.bytes });
          if (c.pauseAfter) await new Promise((r) => setTimeout(r, 40));
        }
        const parts = [...last.entries()].map(([partNumber, v]) => ({ partNumber, etag: v.etag }));
        const expected = Buffer.concat([...last.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v.bytes));
        const digest = await store.completeMultipart(key, uploadId, parts);
        expect(digest.size).toBe(expected.length);
        expect(digest.sha256).toBe(sha256(expected));
        await store.abortMultipart(key, uploadId);
        await store.delete(key);
      }),
      {
        numRuns: 15,
        endOnFailure: true,
        // Part 2 replaced while its first version, large enough to take a while, is being hashed after part 1.
        examples: [[{
          versions: [
            [{ part: 1, size: 1024, pauseAfter: true }],
            [{ part: 2, size: 64 * MiB, pauseAfter: false }, { part: 2, size: 1024, pauseAfter: false }],
          ],
          shuffleSeed: 5, // commits in the order 1, 2, 2
        }]],
      },
    );
  }, 60_000);
});
