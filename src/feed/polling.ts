/**
 * How an origin finds what other origins wrote: it polls the database, one poll at a time,
 * while anything depends on it (streams to feed, changes waiting, edges acknowledging here), and
 * wakes at once when event-wake.ts announces a change.
 */
import type { Clock, TimerHandle } from '../core/clock.js';

export interface PollerOptions {
  clock: Clock;
  pollMs: number;
  /** Whether anything depends on other origins' writes now. */
  wanted(): boolean;
  /** One poll; its failures are its own to report. */
  poll(): Promise<void>;
}

export class Poller {
  private timer: TimerHandle | null = null;
  private polling = false;
  private closed = false;

  constructor(private readonly o: PollerOptions) {}

  /** Polls after `pollMs`, unless a poll is due already or nothing needs one. */
  schedule(): void {
    if (this.closed || this.timer || !this.o.wanted()) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = null;
      void this.run();
    }, this.o.pollMs);
    this.timer.unref?.();
  }

  private async run(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      await this.o.poll();
    } finally {
      this.polling = false;
      this.schedule();
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
  }
}
