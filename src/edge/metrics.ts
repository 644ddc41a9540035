/** The edge's metrics (contract §11): requests, durations, bytes, cache hits and misses, bytes kept, evictions, feed lag, unhandled rejections. */
import type http from 'node:http';
import { Counter, Gauge } from 'prom-client';
import { systemClock, type Clock } from '../core/clock.js';
import { checkScrape, httpMetrics } from '../metrics/registry.js';
import type { EdgeCache } from './cache.js';
import { sendError } from './answer-headers.js';
import type { EdgeState } from './state.js';
import type { FeedFollower } from './follower.js';

const PREVIEW = /[?&]preview=1(?:&|$)/;

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

export interface EdgeMetrics {
  /** Counts one request once its answer has ended. */
  observe(req: http.IncomingMessage, res: http.ServerResponse, route: string): void;
  /** Notes that an answer carries a file's bytes: from this edge's cache or not, and how many. */
  body(res: http.ServerResponse, hit: boolean, length: number): void;
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

export function edgeMetrics(deps: {
  cache: EdgeCache; state: EdgeState; follower: FeedFollower; variants?: VariantCounts; token: string | undefined; onAnswered?: Array<(a: Answered) => void>;
  /** Stamps each answer's `time` (durations are measured on the process's own timer). */
  clock?: Clock;
}): EdgeMetrics {
  const listeners = deps.onAnswered ?? [];
  const clock = deps.clock ?? systemClock;
  const m = httpMetrics('edge');
  const cacheAnswers = new Counter({ name: 'coffer_edge_cache_requests_total', help: 'Byte answers by whether this edge had the file (X-Cache).', labelNames: ['result'], registers: [m.registry] });
  const hit = cacheAnswers.labels('hit');
  const miss = cacheAnswers.labels('miss');
  new Gauge({ name: 'coffer_edge_cache_bytes', help: 'Bytes of files kept in the cache.', registers: [m.registry], collect() { this.set(deps.cache.usedBytes); } });
  new Gauge({ name: 'coffer_edge_cache_capacity_bytes', help: 'The cache bound.', registers: [m.registry], collect() { this.set(deps.cache.capacity); } });
  new Counter({
    name: 'coffer_edge_cache_evictions_total', help: 'Copies evicted to make room.', registers: [m.registry],
    collect() { this.reset(); this.inc(deps.cache.evictions); },
  });
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

  const bodies = new WeakMap<http.ServerResponse, { hit: boolean; length: number }>();

  return {
    unhandledRejection: () => m.unhandledRejections.inc(),
    body(res, isHit, length) {
      bodies.set(res, { hit: isHit, length });
    },
    observe(req, res, route) {
      const time = clock.now();
      const started = process.hrtime.bigint();
      res.once('close', () => {
        const method = req.method === 'HEAD' ? 'HEAD' : 'GET';
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        m.requests.labels(route, method, String(res.statusCode)).inc();
        m.duration.labels(route, method).observe(seconds);
        const body = bodies.get(res);
        const complete = res.writableFinished;
        // Bytes of answers that went out whole; a cut-off one counts nothing.
        const bytes = body && complete && method === 'GET' ? body.length : 0;
        if (body) {
          (body.hit ? hit : miss).inc();
          if (bytes > 0) m.bytesOut.labels(route).inc(bytes);
        }
        if (listeners.length === 0) return;
        const url = req.url ?? '';
        const answered: Answered = {
          time, method: req.method ?? '', fileId: route === '/files/:id' ? url.slice(7).split('?', 1)[0]! : null, status: res.statusCode, bytes, complete,
          durationMs: Math.round(seconds * 1e6) / 1e3, cache: body ? (body.hit ? 'HIT' : 'MISS') : null, client: req.socket.remoteAddress ?? '',
          range: typeof req.headers.range === 'string' ? req.headers.range.slice(0, 100) : null,
          preview: PREVIEW.test(url),
        };
        for (const l of listeners) l(answered);
      });
    },
    async serve(req, res) {
      try {
        checkScrape(deps.token, req.headers.authorization);
      } catch (err) {
        sendError(res, 'unauthorized', (err as Error).message, ['WWW-Authenticate', 'Bearer']);
        return;
      }
      const body = await m.registry.metrics();
      res.writeHead(200, ['Content-Type', m.registry.contentType, 'Cache-Control', 'no-store']).end(body);
    },
  };
}
