/**
 * Attacks on the access log's one-shot batch timer (src/edge/access-log.ts): a destination that
 * never drains or is closed, lines at the batch's byte bound, lines after close.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AccessLog, accessLine } from '../../src/edge/access-log.js';
import type { Answered } from '../../src/edge/metrics.js';

const base: Answered = {
  time: Date.UTC(2026, 10, 26, 11, 30, 5, 7), method: 'GET', fileId: 'f_abc123', status: 200, bytes: 4096, complete: true,
  durationMs: 0.123, cache: 'HIT', client: '127.0.0.1', range: null,
};

/** The log over any stream (AccessLog.open takes a path or stdout). */
const over = (out: Writable, owns = false): AccessLog =>
  new (AccessLog as unknown as new (out: Writable, owns: boolean) => AccessLog)(out, owns);

/** A destination whose writes are taken and never finished: it never drains. */
function stuck(): { out: Writable; chunks: string[] } {
  const chunks: string[] = [];
  const out = new Writable({ highWaterMark: 1024, write(chunk: Buffer, _enc, _cb) { chunks.push(chunk.toString()); } });
  return { out, chunks };
}

/** A destination that takes everything at once. */
function sink(): { out: Writable; text: () => string } {
  const chunks: string[] = [];
  const out = new Writable({ write(chunk: Buffer, _enc, cb) { chunks.push(chunk.toString()); cb(); } });
  return { out, text: () => chunks.join('') };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the access log under pressure', () => {
  it('holds a bounded amount for a destination that never drains, with at most one timer', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const { out, chunks } = stuck();
    const log = over(out);
    for (let i = 0; i < 60_000; i++) {
      log.answered({ ...base, status: 200 + (i % 3) });
      if (i % 1000 === 0) vi.advanceTimersByTime(250);
      expect(vi.getTimerCount()).toBeLessThanOrEqual(1);
    }
    vi.advanceTimersByTime(1000);
    expect(vi.getTimerCount()).toBe(0);
    // One chunk was taken, the rest waits for a drain that never comes; past 8 MB lines are dropped.
    expect(chunks.length).toBe(1);
    expect(log.dropped).toBeGreaterThan(0);
  });

  it('neither throws nor piles up timers when its destination is closed', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const { out } = sink();
    out.destroy();
    const log = over(out);
    for (let i = 0; i < 20_000; i++) {
      expect(() => log.answered(base)).not.toThrow();
      if (i % 500 === 0) vi.advanceTimersByTime(250);
      expect(vi.getTimerCount()).toBeLessThanOrEqual(1);
    }
    vi.useRealTimers();
    await expect(log.close()).resolves.toBeUndefined();
  });

  it('writes every line once and in order across the byte bound, the last ones by the timer', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const { out, text } = sink();
    const log = over(out);
    // Enough lines to cross 64 KiB several times, then a few more that only the timer writes.
    const n = 2_000;
    for (let i = 0; i < n; i++) log.answered({ ...base, bytes: i });
    vi.advanceTimersByTime(200);
    expect(vi.getTimerCount()).toBe(0);
    log.answered({ ...base, bytes: n });
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(200);
    const written = text().trim().split('\n').map((l) => (JSON.parse(l) as { bytes: number }).bytes);
    expect(written).toEqual(Array.from({ length: n + 1 }, (_, i) => i));
  });

  it('writes a batch that fills the bound exactly at once, leaving one timer for what follows', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const { out, text } = sink();
    const log = over(out);
    const line = accessLine(base).length + 1;
    // Pad the file id so whole lines add up to exactly 64 KiB.
    const per = 64;
    const target = (64 * 1024) / per;
    const fileId = 'f'.repeat(target - line + base.fileId!.length);
    expect(accessLine({ ...base, fileId }).length + 1).toBe(target);
    for (let i = 0; i < per - 1; i++) log.answered({ ...base, fileId });
    expect(text()).toBe('');
    log.answered({ ...base, fileId });
    expect(text().split('\n').length - 1).toBe(per);
    log.answered(base);
    vi.advanceTimersByTime(200);
    expect(text().split('\n').length - 1).toBe(per + 1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('survives lines logged after close (answers still finishing), for a stream it owns', async () => {
    const { out } = sink();
    const log = over(out, true);
    log.answered(base);
    await log.close();
    expect(() => log.answered(base)).not.toThrow();
    await new Promise((r) => setTimeout(r, 250));
  });
});
