/**
 * Keyed coalescing ("single flight"): while work for a key is under way, everyone who asks
 * for the same key shares its promise instead of starting the work again.
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
