/**
 * Work by key, the two ways this codebase needs it:
 * - `Coalescer` ("single flight"): while work for a key is under way, everyone who asks for
 *   the same key shares its promise instead of starting the work again;
 * - `KeyedQueue`: work for one key runs one at a time, in the order it was asked for, while
 *   different keys run side by side.
 */
export class Coalescer<K, V> {
  private readonly pending = new Map<K, Promise<V>>();

  /**
   * The result of `make()` for `key`, started only when no work for the key is under way.
   * `joined` tells whether this caller shared work another caller started.
   */
  run(key: K, make: () => Promise<V>): { promise: Promise<V>; joined: boolean } {
    const under = this.pending.get(key);
    if (under) return { promise: under, joined: true };
    // The key is released however the work ends, so a failure is not remembered.
    const promise = Promise.resolve().then(make).finally(() => {
      if (this.pending.get(key) === promise) this.pending.delete(key);
    });
    this.pending.set(key, promise);
    return { promise, joined: false };
  }

  has(key: K): boolean {
    return this.pending.has(key);
  }

  get size(): number {
    return this.pending.size;
  }
}

const ignore = (): void => {};

export class KeyedQueue<K> {
  /** Per key, a promise that settles once the last work queued for it has. */
  private readonly tails = new Map<K, Promise<void>>();

  /** `onEmpty` is called whenever the last work queued, for any key, has ended. */
  constructor(private readonly onEmpty?: () => void) {}

  /** Runs `fn` once every earlier work for `key` has ended; a failure does not stop the queue. */
  run<T>(key: K, fn: () => Promise<T>): Promise<T> {
    const run = (this.tails.get(key) ?? Promise.resolve()).then(fn);
    const tail: Promise<void> = run.then(ignore, ignore).then(() => {
      if (this.tails.get(key) !== tail) return;
      this.tails.delete(key);
      if (this.tails.size === 0) this.onEmpty?.();
    });
    this.tails.set(key, tail);
    return run;
  }

  /** Whether work for `key` is queued or running. */
  has(key: K): boolean {
    return this.tails.has(key);
  }

  keys(): K[] {
    return [...this.tails.keys()];
  }

  get size(): number {
    return this.tails.size;
  }

  /** Settles once everything queued so far, for every key, has ended. */
  async drain(): Promise<void> {
    while (this.tails.size > 0) await Promise.all(this.tails.values());
  }
}
