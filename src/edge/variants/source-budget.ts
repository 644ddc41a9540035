/**
 * How many new variants of one file requests without a signed link may have made: a token
 * bucket per file, `perMinute` deep and refilled at `perMinute` a minute. Anyone may ask a
 * Public image for any width, so without it one file could be made into an unbounded number
 * of distinct variants, each a full decode; a signed link names its variant, so it is not
 * counted. Variants already made are served whatever the budget.
 */

interface Bucket {
  tokens: number;
  at: number;
}

/** Files tracked at once; a full bucket carries no information and is dropped first. */
const MAX_SOURCES = 10_000;

export class SourceBudget {
  private readonly buckets = new Map<string, Bucket>();

  constructor(readonly perMinute: number, private readonly now: () => number = Date.now) {}

  /** Takes one new variant of `source`: 0 when allowed, else the seconds until one would be. */
  take(source: string): number {
    if (this.perMinute === 0) return 60;
    const now = this.now();
    const bucket = this.refilled(source, now);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    // Less a hair: fractions of a token carry rounding error, and a whole second is not owed for it.
    return Math.max(1, Math.ceil(((1 - bucket.tokens) * 60) / this.perMinute - 1e-9));
  }

  private refilled(source: string, now: number): Bucket {
    let bucket = this.buckets.get(source);
    if (!bucket) {
      if (this.buckets.size >= MAX_SOURCES) this.prune(now);
      bucket = { tokens: this.perMinute, at: now };
      this.buckets.set(source, bucket);
      return bucket;
    }
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + ((now - bucket.at) / 60_000) * this.perMinute);
    bucket.at = now;
    return bucket;
  }

  /** Drops the buckets that have refilled; when none has, the oldest half. */
  private prune(now: number): void {
    for (const [source, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 60_000) * this.perMinute >= this.perMinute) this.buckets.delete(source);
    }
    if (this.buckets.size < MAX_SOURCES) return;
    let drop = this.buckets.size / 2;
    for (const source of this.buckets.keys()) {
      if (drop-- <= 0) break;
      this.buckets.delete(source);
    }
  }
}
