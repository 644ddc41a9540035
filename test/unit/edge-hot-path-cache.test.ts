/**
 * A memory hit marks its entry used instead of moving it (second chance): eviction still
 * keeps what was asked for over what was not, and a hit returns the same answer each time.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { EdgeCache } from '../../src/edge/cache.js';
import type { EdgeFile } from '../../src/edge/state.js';

const KiB = 1024;
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'coffer-edge-hot-cache-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

/** A file of `size` bytes of `fill`, and its record. */
function make(id: string, fill: number, size = 100 * KiB): { file: EdgeFile; bytes: Buffer } {
  const bytes = Buffer.alloc(size, fill);
  return { file: { file_id: id, sha256: createHash('sha256').update(bytes).digest('hex'), size } as EdgeFile, bytes };
}

/** 100 KiB files by id, and a cache with room on disk for all and in memory for two of them. */
async function twoInMemory(ids: string[]) {
  const files = new Map(ids.map((id, i) => [id, make(id, i + 1)]));
  const cache = new EdgeCache(dir, 10 * 1024 * KiB, 250 * KiB, async (id, onChunk) => {
    await onChunk(files.get(id)!.bytes);
    return 'ok';
  });
  await cache.open();
  return { cache, f: (id: string) => files.get(id)!.file, bytes: (id: string) => files.get(id)!.bytes };
}

it('evicts from memory what was not asked for since, keeping what was', async () => {
  const { cache, f, bytes } = await twoInMemory(['a', 'b', 'c', 'd']);
  await cache.ensure(f('a'), () => true);
  await cache.ensure(f('b'), () => true);
  // a is asked for again: c's arrival evicts b from memory, not a.
  const first = cache.lookup(f('a'));
  expect(first?.memory?.equals(bytes('a'))).toBe(true);
  await cache.ensure(f('c'), () => true);
  expect(cache.lookup(f('a'))?.memory).toBeDefined();
  expect(cache.lookup(f('b'))?.memory).toBeUndefined();
  expect(cache.lookup(f('b'))?.path).toBeDefined();
  // a's mark was used up by the last eviction pass and renewed since; c has not been asked for.
  await cache.ensure(f('d'), () => true);
  expect(cache.lookup(f('a'))?.memory).toBeDefined();
  expect(cache.lookup(f('c'))?.memory).toBeUndefined();
  expect(cache.lookup(f('d'))?.memory).toBeDefined();
});

it('answers a memory hit with the same object every time, and never a stale one', async () => {
  const one = make('x', 9, 4 * KiB);
  const cache = new EdgeCache(dir, 1024 * KiB, 256 * KiB, async (_id, onChunk) => {
    await onChunk(one.bytes);
    return 'ok';
  });
  await cache.open();
  await cache.ensure(one.file, () => true);
  const hit = cache.lookup(one.file);
  expect(hit).toMatchObject({ size: 4 * KiB });
  expect(cache.lookup(one.file)).toBe(hit);
  // Another version of the file is not answered from this copy.
  expect(cache.lookup({ ...one.file, sha256: 'f'.repeat(64) })).toBeNull();
});

it('keeps a new file in memory when every entry before it was asked for since the last pass', async () => {
  const { cache, f } = await twoInMemory(['a', 'b', 'c']);
  await cache.ensure(f('a'), () => true);
  await cache.ensure(f('b'), () => true);
  cache.lookup(f('a'));
  cache.lookup(f('b'));
  // Both marked: the pass clears their marks and evicts the older of them, not the newcomer.
  await cache.ensure(f('c'), () => true);
  expect(cache.lookup(f('c'))?.memory).toBeDefined();
  expect(cache.lookup(f('a'))?.memory).toBeUndefined();
  expect(cache.lookup(f('b'))?.memory).toBeDefined();
});
