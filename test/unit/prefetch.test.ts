import { describe, expect, it } from 'vitest';
import { Prefetcher } from '../../src/edge/prefetch.js';
import type { EdgeFile } from '../../src/edge/state.js';

const file = (id: string, sha256 = 'a'): EdgeFile => ({
  file_id: id, name: `${id}.bin`, visibility: 'Public', folder_id: null, size: 1, content_type: 'application/octet-stream', sha256, completed_at: 0, updated_at: 0,
});

/** A prefetcher whose fetches wait until the test settles them. */
function harness(concurrency: number, current: Map<string, string>) {
  const started: string[] = [];
  const settle = new Map<string, (err?: Error) => void>();
  const errors: string[] = [];
  const p = new Prefetcher(
    concurrency,
    (f) => new Promise<void>((resolve, reject) => {
      started.push(f.file_id);
      settle.set(f.file_id, (err) => (err ? reject(err) : resolve()));
    }),
    (f) => current.get(f.file_id) === f.sha256,
    (err, f) => errors.push(`${f.file_id}: ${(err as Error).message}`),
  );
  const tick = () => new Promise<void>((r) => setImmediate(r));
  return { p, started, settle, errors, tick };
}

describe('prefetching completed files', () => {
  it('runs at most N at once, in order, and says which are still waiting', async () => {
    const current = new Map(['a', 'b', 'c', 'd'].map((id) => [id, 'a']));
    const { p, started, settle, tick } = harness(2, current);
    for (const id of ['a', 'b', 'c', 'd']) p.add(file(id));
    expect(started).toEqual(['a', 'b']);
    expect(p.waiting('a')).toBe(false);
    expect(p.waiting('c')).toBe(true);
    settle.get('a')!();
    await tick();
    expect(started).toEqual(['a', 'b', 'c']);
    expect(p.waiting('c')).toBe(false);
    expect(p.waiting('d')).toBe(true);
  });

  it('skips a file changed or deleted before its turn, and keeps going after a failed fetch', async () => {
    const current = new Map([['a', 'a'], ['b', 'a'], ['c', 'a'], ['d', 'a']]);
    const { p, started, settle, errors, tick } = harness(1, current);
    for (const id of ['a', 'b', 'c', 'd']) p.add(file(id));
    current.set('b', 'changed');
    current.delete('c');
    settle.get('a')!(new Error('origin down'));
    await tick();
    expect(started).toEqual(['a', 'd']);
    expect(errors).toEqual(['a: origin down']);
    expect(p.waiting('b') || p.waiting('c')).toBe(false);
  });
});
