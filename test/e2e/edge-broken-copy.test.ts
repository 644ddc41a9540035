/**
 * A copy an edge keeps on disk that is removed or cut short behind its back (an operator
 * cleaning the disk, a tmp reaper, a failing disk): the answer under way ends, the edge
 * forgets the copy, and the next request fills the file anew, instead of failing the same way
 * until the copy is evicted. A parent whose copy broke does the same for its children.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MEMORY_FILE_LIMIT } from '../../src/edge/cache.js';
import { startTestEdge, type TestEdge } from '../helpers/logging-edge.js';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { rawRequest } from '../helpers/raw-http.js';
import { sha256 } from '../kit/index.js';

let o: TestOrigin;
const edges: TestEdge[] = [];

beforeAll(async () => {
  o = await startTestOrigin();
});

afterAll(async () => {
  for (const e of edges.reverse()) await e.close();
  await o?.close();
});

async function edge(parents: string[] = []): Promise<TestEdge> {
  const env: Record<string, string> = parents.length > 0 ? { COFFER_EDGE_PARENTS: parents.join(',') } : {};
  const e = await startTestEdge(o, () => env);
  edges.push(e);
  return e;
}

/** A Public file too large to be kept in memory: its hits are read from disk. */
async function uploadLarge(): Promise<{ id: string; path: string; bytes: Buffer }> {
  const bytes = randomBytes(MEMORY_FILE_LIMIT + 300_000);
  const rec = await uploadBytes(o, bytes, { name: 'kept.bin' });
  return { id: rec.file_id, path: new URL(rec.delivery_url).pathname, bytes };
}

/** A Public PNG of noise, stored uncompressed: too large to be kept in memory. */
async function uploadLargeImage(): Promise<{ id: string; path: string }> {
  const side = 700;
  const bytes = await sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } }).png({ compressionLevel: 0 }).toBuffer();
  expect(bytes.length).toBeGreaterThan(MEMORY_FILE_LIMIT);
  const rec = await uploadBytes(o, bytes, { name: 'noise.png', file_type: 'image', content_type: 'image/png' });
  return { id: rec.file_id, path: new URL(rec.delivery_url).pathname };
}

async function keptCopy(e: TestEdge, id: string): Promise<string> {
  await expect.poll(() => e.edge.cache.lookup(e.edge.state.files.get(id)!)?.path, { timeout: 10_000 }).toBeTruthy();
  const names = (await readdir(join(e.dir, 'blobs'))).filter((n) => n.startsWith(`${id}.`));
  expect(names).toHaveLength(1);
  return join(e.dir, 'blobs', names[0]!);
}

/** The answer, or null when the connection broke before the whole body came. */
async function get(e: TestEdge, path: string): Promise<{ status: number; cache: unknown; sha: string } | null> {
  try {
    const res = await rawRequest(e.edge.url, path);
    return { status: res.status, cache: res.headers['x-cache'], sha: sha256(res.body) };
  } catch {
    return null;
  }
}

describe('a kept copy broken behind the edge\'s back', () => {
  it('removed: the answer under way ends, and the next request fills the file anew', async () => {
    const e = await edge();
    const file = await uploadLarge();
    const kept = await keptCopy(e, file.id);
    expect(await get(e, file.path)).toEqual({ status: 200, cache: 'HIT', sha: sha256(file.bytes) });
    await rm(kept);
    const broken = await get(e, file.path);
    // Headers went before the file was opened: the body breaks off, it is never wrong bytes.
    expect(broken === null || broken.sha !== sha256(file.bytes)).toBe(true);
    expect(e.edge.cache.brokenCopies).toBe(1);
    expect(await get(e, file.path)).toEqual({ status: 200, cache: 'MISS', sha: sha256(file.bytes) });
    await keptCopy(e, file.id);
    expect(await get(e, file.path)).toEqual({ status: 200, cache: 'HIT', sha: sha256(file.bytes) });
  });

  it('cut short: the answer breaks off, never padded, and the next request fills the file anew', async () => {
    const e = await edge();
    const file = await uploadLarge();
    const kept = await keptCopy(e, file.id);
    await truncate(kept, 1000);
    const broken = await get(e, file.path);
    expect(broken).toBeNull();
    expect(e.edge.cache.brokenCopies).toBe(1);
    expect(await get(e, file.path)).toEqual({ status: 200, cache: 'MISS', sha: sha256(file.bytes) });
  });

  it('replaced by a directory: the answer breaks off, and the next request fills the file anew', async () => {
    const e = await edge();
    const file = await uploadLarge();
    const kept = await keptCopy(e, file.id);
    await rm(kept);
    await mkdir(kept);
    expect(await get(e, file.path)).toBeNull();
    expect(e.edge.cache.brokenCopies).toBe(1);
    expect(await get(e, file.path)).toEqual({ status: 200, cache: 'MISS', sha: sha256(file.bytes) });
  });

  it('at a parent, cut short: its child takes the origin, and the parent forgets the copy', async () => {
    const parent = await edge();
    const file = await uploadLarge();
    await truncate(await keptCopy(parent, file.id), MEMORY_FILE_LIMIT);
    const child = await edge([parent.edge.url]);
    expect(await get(child, file.path)).toEqual({ status: 200, cache: 'MISS', sha: sha256(file.bytes) });
    expect(child.edge.cache.counts).toMatchObject({ origin: 1, failovers: 1 });
    await expect.poll(() => parent.edge.cache.brokenCopies).toBe(1);
    expect(await get(parent, file.path)).toEqual({ status: 200, cache: 'MISS', sha: sha256(file.bytes) });
  });

  it('the source of an image variant: one answer asks to try again, and the next is made from a new copy', async () => {
    const e = await edge();
    const image = await uploadLargeImage();
    await rm(await keptCopy(e, image.id));
    const variant = `${image.path}?w=100&format=webp`;
    const first = await rawRequest(e.edge.url, variant);
    expect([first.status, first.headers['retry-after']]).toEqual([503, '1']);
    expect(e.edge.cache.brokenCopies).toBe(1);
    const next = await rawRequest(e.edge.url, variant);
    expect([next.status, next.headers['content-type']]).toEqual([200, 'image/webp']);
    expect((await sharp(next.body).metadata()).width).toBe(100);
  });

  it('at a parent: a child\'s fill falls back to the origin, and the parent fills its copy anew', async () => {
    const parent = await edge();
    const file = await uploadLarge();
    await rm(await keptCopy(parent, file.id));
    const child = await edge([parent.edge.url]);
    // A miss at the child: its fill from the parent breaks off, and it takes the file from the origin.
    expect(await get(child, file.path)).toEqual({ status: 200, cache: 'MISS', sha: sha256(file.bytes) });
    expect(child.edge.cache.counts).toMatchObject({ origin: 1, failovers: 1 });
    expect(parent.edge.cache.brokenCopies).toBe(1);
    expect(await get(parent, file.path)).toEqual({ status: 200, cache: 'MISS', sha: sha256(file.bytes) });
  });
});
