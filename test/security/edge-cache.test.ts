/** An edge's cache keeps only whole copies across a restart. */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
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
