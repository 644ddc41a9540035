/**
 * A clock tests move by hand: `advance(ms)` runs every timer that falls due, in order, and lets
 * promises settle between them, so lease, expiry and revocation tests need no sleeps.
 */
import type { Clock, TimerHandle } from '../../src/core/clock.js';

interface Pending {
  id: number;
  at: number;
  every: number | null;
  fn: () => void;
}

export class ManualClock implements Clock {
  private wall: number;
  private mono = 0;
  private nextId = 1;
  private readonly timers = new Map<number, Pending>();

  constructor(start = Date.parse('2026-01-01T00:00:00Z')) {
    this.wall = start;
  }

  now(): number {
    return this.wall;
  }

  monotonic(): number {
    return this.mono;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    return this.add(fn, ms, null);
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    return this.add(fn, ms, Math.max(1, ms));
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle) this.timers.delete((handle as { id: number }).id);
  }

  clearInterval(handle: TimerHandle | undefined): void {
    this.clearTimeout(handle);
  }

  /** Moves time forward by `ms`, running each timer due on the way at its own moment. */
  async advance(ms: number): Promise<void> {
    const end = this.mono + ms;
    for (;;) {
      const due = [...this.timers.values()].filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.step(due.at - this.mono);
      if (due.every === null) this.timers.delete(due.id);
      else due.at += due.every;
      due.fn();
      await settle();
    }
    this.step(end - this.mono);
    await settle();
  }

  /**
   * Lets time pass, `stepMs` at a time, until `work` settles: for a call that answers only once
   * the clock has moved (revoke-links waits until it has passed the revocation).
   */
  async flowUntil<T>(work: Promise<T>, stepMs = 1): Promise<T> {
    let settled = false;
    const done = () => {
      settled = true;
    };
    work.then(done, done);
    while (!settled) {
      await this.advance(stepMs);
      // At about the pace of real time, so the loop leaves the process to the work it waits for.
      if (!settled) await new Promise((resolve) => setTimeout(resolve, stepMs));
    }
    return work;
  }

  /** How many timers are waiting (for tests that check nothing is left behind). */
  get pending(): number {
    return this.timers.size;
  }

  private step(ms: number): void {
    this.mono += ms;
    this.wall += ms;
  }

  private add(fn: () => void, ms: number, every: number | null): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { id, at: this.mono + Math.max(0, ms), every, fn });
    return { id, unref: () => undefined } as TimerHandle;
  }
}

/** Lets queued promise callbacks and I/O callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
