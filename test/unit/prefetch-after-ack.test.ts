/** A completion's prefetch starts only once its gate opens (the settled line, an acknowledgement answered, or a bound passed); a closed gate holds its own file only. */
import { describe, expect, it } from 'vitest';
import { Prefetcher } from '../../src/edge/prefetch.js';
import { SETTLE_WAIT_MS } from '../../src/edge/follower.js';
import type { EdgeFile } from '../../src/edge/state.js';
import { ManualClock } from '../kit/clock.js';

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

  it('a closed gate holds its own file, not the files after it (a steady flow of completions never starves the queue)', () => {
    const started: string[] = [];
    const p = new Prefetcher(4, async (f) => void started.push(f.file_id), () => true, () => {});
    let open = () => {};
    p.add(file('a'), (go) => (open = go));
    p.add(file('b'));
    expect(started).toEqual(['b']);
    open();
    expect(started).toEqual(['b', 'a']);
  });

  it('a steady flow of completions (one per 500 ms, no settled line) still prefetches each within its deadline', async () => {
    const clock = new ManualClock();
    const fetched: string[] = [];
    const p = new Prefetcher(4, async (f) => void fetched.push(f.file_id), () => true, () => {});
    for (let i = 0; i < 20; i++) {
      // As server.ts asks: the gate opens on the settled line or SETTLE_WAIT_MS later (follower.afterSettled).
      p.add(file(`f${i}`), (go) => void clock.setTimeout(go, SETTLE_WAIT_MS));
      await clock.advance(500);
    }
    // 10 s in: every file added more than 1 s ago should have been fetched.
    expect(fetched.length).toBeGreaterThanOrEqual(18);
  });
});
