/** A completion's prefetch starts only once its acknowledgement has been answered (or a bound passed). */
import { describe, expect, it } from 'vitest';
import { Prefetcher } from '../../src/edge/prefetch.js';
import type { EdgeFile } from '../../src/edge/state.js';

const file = (id: string): EdgeFile => ({
  file_id: id, name: `${id}.bin`, visibility: 'Public', folder_id: null, size: 1, content_type: 'application/octet-stream', sha256: 'a', completed_at: 0, updated_at: 0,
});

describe('prefetch behind a gate', () => {
  it('counts the file as queued but starts nothing until the gate opens', () => {
    const started: string[] = [];
    const p = new Prefetcher(2, async (f) => void started.push(f.file_id), () => true, () => {});
    let open = () => {};
    p.add(file('a'), (go) => (open = go));
    expect(started).toEqual([]);
    expect(p.waiting('a'), 'a request meanwhile still counts it as prefetched').toBe(true);
    open();
    open();
    expect(started).toEqual(['a']);
    expect(p.waiting('a')).toBe(false);
  });

  it('holds later files too while an earlier gate is closed', () => {
    const started: string[] = [];
    const p = new Prefetcher(4, async (f) => void started.push(f.file_id), () => true, () => {});
    let open = () => {};
    p.add(file('a'), (go) => (open = go));
    p.add(file('b'));
    expect(started).toEqual([]);
    open();
    expect(started).toEqual(['a', 'b']);
  });
});
