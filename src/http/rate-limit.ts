/** A token bucket per client address: `rate` requests per second, bursts of twice that. */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly burst: number;
  private readonly sweep: NodeJS.Timeout;

  constructor(private readonly rate: number, private readonly now: () => number = Date.now) {
    this.burst = rate * 2;
    // Full buckets carry no information; dropping them bounds memory.
    this.sweep = setInterval(() => this.forgetIdle(), 60_000);
    this.sweep.unref();
  }

  /** Returns 0 when allowed, else the seconds to wait. */
  take(client: string): number {
    const now = this.now();
    let bucket = this.buckets.get(client);
    if (!bucket) {
      bucket = { tokens: this.burst, at: now };
      this.buckets.set(client, bucket);
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.rate);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.rate));
  }

  private forgetIdle(): void {
    const now = this.now();
    for (const [client, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.rate >= this.burst) this.buckets.delete(client);
    }
  }

  close(): void {
    clearInterval(this.sweep);
  }
}
