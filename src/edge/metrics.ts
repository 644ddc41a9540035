/** The edge's metrics (contract §11): requests, durations, bytes, cache hits and misses, bytes kept, evictions, feed lag, unhandled rejections. */
import type http from 'node:http';
import type { Counter } from 'prom-client';
import { systemClock, type Clock } from '../core/clock.js';
import { performance } from 'node:perf_hooks';
import { DURATION_BUCKETS, RouteTally, fillHttpSeries } from '../metrics/tallied.js';
import { originForm } from './delivery.js';
import type { EdgeCache } from './cache.js';
import { sendError } from './answer-headers.js';
import { checkScrape } from '../metrics/scrape-token.js';
import { rangeHeader } from './request-headers.js';
import type { EdgeState } from './state.js';
import type { FeedFollower } from './follower.js';

const PREVIEW = /[?&]preview=1(?:&|$)/;

// What observe() and body() note on a response for its 'close' (symbols: no WeakMap per request).
const TIME = Symbol('time');
const ARRIVED = Symbol('arrived');
const ROUTE = Symbol('route');
const BODY = Symbol('body');
const LENGTH = Symbol('length');
const FILE = Symbol('file');
type Noted = http.ServerResponse & { [TIME]?: number; [ARRIVED]: number; [ROUTE]?: RouteTally; [BODY]?: boolean; [LENGTH]?: number; [FILE]?: string };

/** The file id of a `/files/ID[?query]` target (absolute form too: RFC 9112 §3.2.2). */
function fileIdOf(url: string, q: number): string {
  const path = q < 0 ? url : url.slice(0, q);
  return path.startsWith('/files/') ? path.slice(7) : originForm(path).slice(7);
}

/** One answer, as it ended: what usage and the access log are made of. */
export interface Answered {
  /** Unix ms the request arrived. */
  time: number;
  method: string;
  /** The file asked for, when the path names one. */
  fileId: string | null;
  status: number;
  /** Body bytes of the answer; those of an answer cut short are not known, and counted 0. */
  bytes: number;
  /** Whether the whole answer went out. */
  complete: boolean;
  durationMs: number;
  cache: 'HIT' | 'MISS' | null;
  client: string;
  range: string | null;
  /** The request says it is its owner's own preview or thumbnail (`preview=1`): not a download. */
  preview?: boolean;
}

/**
 * An answer as the listeners see it. The client's address and the Range header are read
 * from the request only when a listener asks (the access log; usage and the status do
 * not), and only while the listeners are called.
 */
class AnsweredRequest implements Answered {
  readonly method: string;

  constructor(
    private readonly req: http.IncomingMessage,
    readonly time: number,
    readonly fileId: string | null,
    readonly status: number,
    readonly bytes: number,
    readonly complete: boolean,
    readonly durationMs: number,
    readonly cache: 'HIT' | 'MISS' | null,
    readonly preview: boolean,
  ) {
    this.method = req.method ?? '';
  }

  get client(): string {
    return this.req.socket.remoteAddress ?? '';
  }

  /** From rawHeaders: building req.headers for every answer costs the hot path (request-headers.ts). */
  get range(): string | null {
    return rangeHeader(this.req.rawHeaders)?.slice(0, 100) ?? null;
  }
}

export interface EdgeMetrics {
  /** Counts one request once its answer has ended; returns the time it arrived (Unix ms, the clock's). */
  observe(req: http.IncomingMessage, res: http.ServerResponse, route: string): number;
  /** Notes that an answer carries a file's bytes: from this edge's cache or not, and how many. */
  body(res: http.ServerResponse, hit: boolean, length: number): void;
  /** Notes the file id read from the request's path (its text is hashed once, by the first lookup). */
  file(res: http.ServerResponse, id: string): void;
  unhandledRejection(): void;
  /** Answers GET /metrics. */
  serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;
}

/** What the edge's variant maker counts. */
export interface VariantCounts {
  made: number;
  failed: number;
  active: number;
  queued: number;
}

/** What a scrape reads besides the per-request tallies: plain counts kept by the edge. */
interface Counts {
  hits: number;
  misses: number;
  unhandled: number;
}

export interface EdgeMetricsDeps {
  cache: EdgeCache;
  state: EdgeState;
  follower: FeedFollower;
  variants?: VariantCounts;
  token: string | undefined;
  onAnswered?: Array<(a: Answered) => void>;
  /** Stamps each answer's `time` (durations are measured on the process's own timer). */
  clock?: Clock;
}

/**
 * The prom-client registry, made at the first scrape: an edge that is never scraped never
 * loads prom-client (about 2.5 MB of an idle edge's memory). Node's own series (GC, event
 * loop) count from that first scrape on.
 */
async function scrapeRegistry(deps: EdgeMetricsDeps, counts: Counts) {
  const [{ Counter, Gauge }, { httpMetrics }] = await Promise.all([import('prom-client'), import('../metrics/registry.js')]);
  const m = httpMetrics('edge');
  // prom-client counts the process's CPU from now on: what was spent before is added once.
  const spent = process.cpuUsage();
  const cpu = (kind: string) => m.registry.getSingleMetric(`coffer_process_cpu_${kind}seconds_total`) as Counter | undefined;
  cpu('user_')?.inc(spent.user / 1e6);
  cpu('system_')?.inc(spent.system / 1e6);
  cpu('')?.inc((spent.user + spent.system) / 1e6);
  // Filled when scraped from plain counts, like the HTTP series.
  new Counter({ name: 'coffer_edge_cache_requests_total', help: 'Byte answers by whether this edge had the file (X-Cache).', labelNames: ['result'], registers: [m.registry], collect() {
    this.reset();
    if (counts.hits > 0) this.inc({ result: 'hit' }, counts.hits);
    if (counts.misses > 0) this.inc({ result: 'miss' }, counts.misses);
  } });
  new Gauge({ name: 'coffer_edge_cache_bytes', help: 'Bytes of files kept in the cache.', registers: [m.registry], collect() { this.set(deps.cache.usedBytes); } });
  new Gauge({ name: 'coffer_edge_cache_capacity_bytes', help: 'The cache bound.', registers: [m.registry], collect() { this.set(deps.cache.capacity); } });
  new Counter({
    name: 'coffer_edge_cache_evictions_total', help: 'Copies evicted to make room.', registers: [m.registry],
    collect() { this.reset(); this.inc(deps.cache.evictions); },
  });
  new Counter({
    name: 'coffer_edge_cache_broken_copies_total', help: 'Kept copies found gone or short on disk, forgotten to be filled anew.', registers: [m.registry],
    collect() { this.reset(); this.inc(deps.cache.brokenCopies); },
  });
  // Tiers (sources.ts, tier-route.ts): where this edge's fills came from, and those it served to child edges.
  new Counter({ name: 'coffer_edge_fills_total', help: 'Fills kept, by where their bytes came from (a parent edge or the origin).', labelNames: ['source'], registers: [m.registry], collect() {
    this.reset(); this.inc({ source: 'parent' }, deps.cache.counts.parent); this.inc({ source: 'origin' }, deps.cache.counts.origin);
  } });
  new Counter({ name: 'coffer_edge_fill_failovers_total', help: 'Fill sources given up on for the next (a parent failed, was stale or silent).', registers: [m.registry], collect() { this.reset(); this.inc(deps.cache.counts.failovers); } });
  new Counter({ name: 'coffer_edge_fills_served_to_children_total', help: 'Fills this edge answered to its child edges.', registers: [m.registry], collect() { this.reset(); this.inc(deps.cache.counts.servedToChildren); } });
  new Gauge({ name: 'coffer_edge_feed_lag_events', help: 'Events the origin has announced that this edge has not applied yet.', registers: [m.registry], collect() {
    this.set(Math.max(0, deps.follower.announcedHead - deps.state.seq));
  } });
  const variants = deps.variants;
  if (variants) {
    new Counter({ name: 'coffer_edge_variants_made_total', help: 'Image variants made (transforms that succeeded).', registers: [m.registry], collect() { this.reset(); this.inc(variants.made); } });
    new Counter({ name: 'coffer_edge_variants_failed_total', help: 'Transforms that failed (undecodable or too large images).', registers: [m.registry], collect() { this.reset(); this.inc(variants.failed); } });
    new Gauge({ name: 'coffer_edge_variant_transforms', help: 'Transforms running now, and waiting for a turn.', labelNames: ['state'], registers: [m.registry], collect() {
      this.set({ state: 'running' }, variants.active);
      this.set({ state: 'queued' }, variants.queued);
    } });
    new Gauge({ name: 'coffer_edge_variants_cached', help: 'Variants kept in the cache.', registers: [m.registry], collect() { this.set(deps.cache.variantCount); } });
  }
  new Gauge({ name: 'coffer_edge_applied_seq', help: 'The last event this edge applied.', registers: [m.registry], collect() { this.set(deps.state.seq); } });
  return m;
}

export function edgeMetrics(deps: EdgeMetricsDeps): EdgeMetrics {
  const listeners = deps.onAnswered ?? [];
  const clock = deps.clock ?? systemClock;
  const counts: Counts = { hits: 0, misses: 0, unhandled: 0 };
  let registry: ReturnType<typeof scrapeRegistry> | null = null;

  // Counted in plain numbers per request; prom-client gets the totals when scraped (metrics/tallied.ts).
  const routes = new Map<string, RouteTally>();
  const tallyOf = (route: string): RouteTally => {
    let t = routes.get(route);
    if (!t) {
      t = new RouteTally(route, DURATION_BUCKETS);
      routes.set(route, t);
    }
    return t;
  };

  /** Once an answer has ended (its response's 'close'; `this` is the response): counts it and tells the listeners. */
  function closed(this: Noted): void {
    const res = this;
    const req = res.req;
    const seconds = (performance.now() - res[ARRIVED]) / 1e3;
    const head = req.method === 'HEAD';
    const tally = res[ROUTE]!;
    (head ? tally.head : tally.get).add(res.statusCode, seconds);
    const hit = res[BODY];
    const complete = res.writableFinished;
    // Bytes of answers that went out whole; a cut-off one counts nothing.
    const bytes = hit !== undefined && complete && !head ? res[LENGTH]! : 0;
    if (hit !== undefined) {
      if (hit) counts.hits++;
      else counts.misses++;
      tally.bytesOut += bytes;
    }
    if (listeners.length === 0) return;
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const answered = new AnsweredRequest(req, res[TIME]!, tally.route === '/files/:id' ? res[FILE] ?? fileIdOf(url, q) : null, res.statusCode, bytes, complete,
      Math.round(seconds * 1e6) / 1e3, hit === undefined ? null : hit ? 'HIT' : 'MISS', q >= 0 && url.includes('preview=1', q) && PREVIEW.test(url));
    for (const l of listeners) l(answered);
  }

  return {
    unhandledRejection: () => {
      counts.unhandled++;
    },
    body(res, isHit, length) {
      const noted = res as Noted;
      noted[BODY] = isHit;
      noted[LENGTH] = length;
    },
    file(res, id) {
      (res as Noted)[FILE] = id;
    },
    observe(_req, res, route) {
      const noted = res as Noted;
      const now = clock.now();
      noted[TIME] = now;
      noted[ARRIVED] = performance.now();
      noted[ROUTE] = tallyOf(route);
      res.on('close', closed);
      return now;
    },
    async serve(req, res) {
      // Refused before prom-client loads: a scrape without the token costs the edge nothing.
      try {
        checkScrape(deps.token, req.headers.authorization);
      } catch (err) {
        sendError(res, 'unauthorized', (err as Error).message, ['WWW-Authenticate', 'Bearer']);
        return;
      }
      // A failed load (a broken install) is tried again at the next scrape.
      registry ??= scrapeRegistry(deps, counts).catch((err: unknown) => {
        registry = null;
        throw err;
      });
      const m = await registry;
      fillHttpSeries(routes.values(), m.requests, m.duration, m.bytesOut);
      m.unhandledRejections.reset();
      if (counts.unhandled > 0) m.unhandledRejections.inc(counts.unhandled);
      const body = await m.registry.metrics();
      res.writeHead(200, ['Content-Type', m.registry.contentType, 'Cache-Control', 'no-store']).end(body);
    },
  };
}
