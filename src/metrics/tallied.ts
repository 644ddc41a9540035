/**
 * HTTP series counted in plain numbers on a hot path and handed to prom-client only when
 * scraped: the edge answers a cached file in a few tens of microseconds, and prom-client's
 * labels()/inc()/observe() (label objects, hashing and validation on every call) cost it
 * about a fifth of that. A scrape writes the totals into the ordinary prom-client metrics,
 * so the text is the one they would have printed had every request been counted at once.
 */
import type { Counter, Histogram } from 'prom-client';

/**
 * The request duration histogram's bounds, in seconds. Kept here, without prom-client, so
 * that an edge counts its requests before (and without) ever loading prom-client.
 */
export const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** One route and method: the answers by status, their durations, the body bytes sent. */
export class MethodTally {
  readonly statuses = new Map<number, number>();
  /** Observations per bucket, not cumulative; the last slot is past every bound (+Inf only). */
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.buckets = new Float64Array(bounds.length + 1);
  }

  add(status: number, seconds: number): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    this.buckets[i]! += 1;
    this.sum += seconds;
    this.count += 1;
  }
}

/** Internals of prom-client's Histogram (15.x) that a scrape fills: one entry per label set. */
interface HistogramEntry {
  labels: Record<string, string>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

/** What a route's tallies look like to prom-client: its labels and its two methods. */
export class RouteTally {
  readonly get: MethodTally;
  readonly head: MethodTally;
  bytesOut = 0;

  constructor(readonly route: string, bounds: readonly number[]) {
    this.get = new MethodTally(bounds);
    this.head = new MethodTally(bounds);
  }
}

/**
 * Writes the tallies into the requests counter, the duration histogram and the bytes counter
 * (totals since start, so a scrape may come at any time and any number of times).
 */
export function fillHttpSeries(routes: Iterable<RouteTally>, requests: Counter<'route' | 'method' | 'status'>, duration: Histogram<'route' | 'method'>, bytesOut: Counter<'route'>): void {
  requests.reset();
  duration.reset();
  bytesOut.reset();
  const bounds = (duration as unknown as { upperBounds: readonly number[] }).upperBounds;
  for (const r of routes) {
    if (!sameBounds(r.get.bounds, bounds)) throw new Error(`the tallies of ${r.route} have other bounds than the histogram they fill`);
    for (const [method, t] of [['GET', r.get], ['HEAD', r.head]] as const) {
      for (const [status, n] of t.statuses) requests.inc({ route: r.route, method, status: String(status) }, n);
      if (t.count === 0) continue;
      const labels = { route: r.route, method };
      duration.zero(labels);
      const entry = histogramEntry(duration, labels);
      bounds.forEach((bound, i) => {
        entry.bucketValues[bound] = t.buckets[i]!;
      });
      entry.sum = t.sum;
      entry.count = t.count;
    }
    if (r.bytesOut > 0) bytesOut.inc({ route: r.route }, r.bytesOut);
  }
}

function sameBounds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function histogramEntry(h: Histogram<'route' | 'method'>, labels: Record<string, string>): HistogramEntry {
  const map = (h as unknown as { hashMap: Record<string, HistogramEntry> }).hashMap;
  const entry = Object.values(map).find((e) => e.labels === labels);
  if (!entry) throw new Error('prom-client kept no series for the labels just zeroed');
  return entry;
}
