/** An edge's cache keeps only whole copies across a restart. */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { EdgeCache } from '../../src/edge/cache.js';
import type { EdgeFile } from '../../src/edge/state.js';

test('a cached file shorter than its record is dropped on start and fetched again', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'coffer-edge-cache-'));
  try {
    const bytes = Buffer.alloc(3 * 1024 * 1024, 7);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const file = { file_id: 'f1', sha256, size: bytes.length } as EdgeFile;
    await mkdir(join(dir, 'blobs'), { recursive: true });
    // What a crash mid-write leaves: the right name, half the bytes.
    await writeFile(join(dir, 'blobs', `f1.${sha256}`), bytes.subarray(0, bytes.length / 2));
    let fetched = 0;
    const cache = new EdgeCache(dir, 64 * 1024 * 1024, 8 * 1024 * 1024, async (_id, onChunk) => {
      fetched++;
      await onChunk(bytes);
      return 'ok';
    });
    await cache.open();
    cache.retain(new Map([['f1', file]]));
    expect(cache.lookup(file)).toBeNull();
    const got = await cache.ensure(file, () => true);
    expect(fetched).toBe(1);
    expect(got?.size).toBe(bytes.length);
    expect(cache.lookup(file)?.size).toBe(bytes.length);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('fetches under way are limited in number and count against the cache bound', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'coffer-edge-cache-'));
  try {
    const MiB = 1024 * 1024;
    const release: Array<() => void> = [];
    let started = 0;
    // A source that holds every fetch until released, then sends zeros of the asked size.
    const sizes = new Map<string, number>();
    const cache = new EdgeCache(dir, 40 * MiB, 4 * MiB, async (id, onChunk) => {
      started++;
      await new Promise<void>((r) => release.push(r));
      await onChunk(Buffer.alloc(sizes.get(id)!));
      return 'ok';
    }, 4);
    await cache.open();
    const file = (id: string, size: number) => {
      sizes.set(id, size);
      const sha256 = createHash('sha256').update(Buffer.alloc(size)).digest('hex');
      return { file_id: id, sha256, size } as EdgeFile;
    };
    // 30 MiB reserved: a second 30 MiB fetch does not fit beside it and is refused at once.
    const a = cache.ensure(file('a', 30 * MiB), () => true);
    expect(cache.usedBytes).toBe(30 * MiB);
    expect(await cache.ensure(file('b', 30 * MiB), () => true)).toBeNull();
    // Small ones fit, up to the number of fetches allowed at once.
    const small = ['c', 'd', 'e'].map((id) => cache.ensure(file(id, MiB), () => true));
    expect(await cache.ensure(file('f', MiB), () => true)).toBeNull();
    expect(cache.usedBytes).toBe(33 * MiB);
    // A second reader of a fetch under way joins it instead of counting twice.
    const again = cache.ensure(file('c', MiB), () => true);
    expect(cache.usedBytes).toBe(33 * MiB);
    for (let i = 0; i < 50 && started < 4; i++) await new Promise((r) => setTimeout(r, 10));
    for (const go of release.splice(0)) go();
    expect((await a)?.size).toBe(30 * MiB);
    for (const p of [...small, again]) expect((await p)?.size).toBe(MiB);
    expect(cache.usedBytes).toBe(33 * MiB);
    // Once they are kept, a new fetch evicts what was used longest ago to make room.
    const b = cache.ensure(file('b', 30 * MiB), () => true);
    expect(cache.usedBytes).toBeLessThanOrEqual(40 * MiB);
    for (let i = 0; i < 50 && release.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    for (const go of release.splice(0)) go();
    expect((await b)?.size).toBe(30 * MiB);
    expect(cache.usedBytes).toBeLessThanOrEqual(40 * MiB);
    expect(cache.lookup(file('a', 30 * MiB))).toBeNull();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a copy whose file is deleted while it is renamed into place is not kept', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'coffer-edge-cache-'));
  try {
    const bytes = Buffer.alloc(64 * 1024, 3);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const file = { file_id: 'gone', sha256, size: bytes.length } as EdgeFile;
    const cache = new EdgeCache(dir, 64 * 1024 * 1024, 8 * 1024 * 1024, async (_id, onChunk) => {
      await onChunk(bytes);
      return 'ok';
    });
    await cache.open();
    // Wanted when the copy is whole; the delete is applied (and its drop finds nothing) while the
    // rename is under way, so every later asking says no.
    let asked = 0;
    const stillWanted = () => {
      if (asked++ > 0) return false;
      cache.drop(file.file_id);
      return true;
    };
    expect(await cache.ensure(file, stillWanted)).toBeNull();
    expect(asked, 'asked again once the copy was in place').toBeGreaterThan(1);
    expect(cache.lookup(file)).toBeNull();
    expect((await readdir(join(dir, 'blobs'))).filter((name) => name.startsWith('gone.'))).toEqual([]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a reader of a copy found broken forgets that copy only, never one kept since', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'coffer-edge-cache-'));
  try {
    const bytes = Buffer.alloc(2 * 1024 * 1024, 5);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const file = { file_id: 'again', sha256, size: bytes.length } as EdgeFile;
    const cache = new EdgeCache(dir, 64 * 1024 * 1024, 1024 * 1024, async (_id, onChunk) => {
      await onChunk(bytes);
      return 'ok';
    });
    await cache.open();
    const first = (await cache.ensure(file, () => true))!.path!;
    cache.dropBroken(first);
    // The same version filled again: a slow reader of the first copy then finds it broken too.
    const second = (await cache.ensure(file, () => true))!.path!;
    expect(second).not.toBe(first);
    cache.dropBroken(first);
    expect(cache.brokenCopies).toBe(1);
    expect(cache.lookup(file)?.path).toBe(second);
    expect(await readdir(join(dir, 'blobs'))).toEqual([second.slice(join(dir, 'blobs').length + 1)]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
