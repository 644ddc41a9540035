/**
 * The SDK's pure helpers: the shared Limiter (src/sdk/upload.ts) and the backoff and
 * abortable sleep of src/sdk/retry.ts.
 */
import { describe, expect, it } from 'vitest';
import { Limiter } from '../../src/sdk/index.js';
import { DEFAULT_RETRY, backoffDelay, sleep } from '../../src/sdk/retry.js';

const tick = (ms = 5) => new Promise<void>((r) => setTimeout(r, ms));

describe('Limiter', () => {
  it('refuses a size that is not a whole number of at least 1', () => {
    for (const size of [0, -1, 1.5, Number.NaN]) expect(() => new Limiter(size)).toThrow(RangeError);
  });

  it('never runs more than its size at once, and runs everything', async () => {
    const limiter = new Limiter(3);
    let active = 0;
    let peak = 0;
    const done: number[] = [];
    await Promise.all(Array.from({ length: 20 }, (_, i) => limiter.run(async () => {
      active++;
      peak = Math.max(peak, active);
      await tick(1 + (i % 4));
      active--;
      done.push(i);
      return i;
    })));
    expect(peak).toBe(3);
    expect(done.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('frees the slot when a task fails', async () => {
    const limiter = new Limiter(1);
    await expect(limiter.run(async () => { throw new Error('boom'); })).rejects.toThrow('boom');
    await expect(limiter.run(async () => 7)).resolves.toBe(7);
  });

  it('a waiter whose signal aborts leaves the queue without taking a slot', async () => {
    const limiter = new Limiter(1);
    let release!: () => void;
    const holder = limiter.run(() => new Promise<void>((r) => { release = r; }));
    const ctl = new AbortController();
    let ran = false;
    const waiting = limiter.run(async () => { ran = true; }, ctl.signal);
    const third = limiter.run(async () => 'third');
    ctl.abort();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    release();
    await holder;
    await expect(third).resolves.toBe('third');
    expect(ran).toBe(false);
    // The slot count is back to one free slot: two sequential runs still work.
    await expect(limiter.run(async () => 1)).resolves.toBe(1);
  });

  it('does not start a task whose signal is already aborted', async () => {
    const limiter = new Limiter(2);
    let ran = false;
    await expect(limiter.run(async () => { ran = true; }, AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
    expect(ran).toBe(false);
    await expect(limiter.run(async () => 'ok')).resolves.toBe('ok');
  });
});

describe('backoff and sleep', () => {
  it('backoffDelay: full jitter between half and all of the doubled, capped base', () => {
    const opts = { ...DEFAULT_RETRY, baseDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffDelay(1, opts, () => 0)).toBe(50);
    expect(backoffDelay(1, opts, () => 1)).toBe(100);
    expect(backoffDelay(2, opts, () => 1)).toBe(200);
    expect(backoffDelay(3, opts, () => 0)).toBe(200);
    expect(backoffDelay(10, opts, () => 1)).toBe(1000);
    for (let retry = 1; retry <= 12; retry++) {
      const d = backoffDelay(retry, opts);
      const ceiling = Math.min(1000, 100 * 2 ** (retry - 1));
      expect(d).toBeGreaterThanOrEqual(ceiling / 2);
      expect(d).toBeLessThanOrEqual(ceiling);
    }
  });

  it('sleep waits, and rejects with the reason as soon as its signal aborts', async () => {
    const t0 = performance.now();
    await sleep(30);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(25);
    const ctl = new AbortController();
    const t1 = performance.now();
    const p = sleep(10_000, ctl.signal);
    setTimeout(() => ctl.abort(new Error('stop')), 10);
    await expect(p).rejects.toThrow('stop');
    // Real time: the SDK's sleep is on the system's timers; 1 s against the 10 s it would wait.
    expect(performance.now() - t1).toBeLessThan(1000);
    await expect(sleep(10, AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
  });
});
