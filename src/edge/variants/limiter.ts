/**
 * At most `concurrency` transforms at once, the rest waiting in order; a bounded queue, so
 * a flood of distinct variants is refused at once instead of piling up requests.
 */
export class Limiter {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly concurrency: number, readonly maxQueued: number) {}

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Whether another task would have to be refused now. */
  get full(): boolean {
    return this.running >= this.concurrency && this.waiting.length >= this.maxQueued;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter; nobody can slip in between.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
