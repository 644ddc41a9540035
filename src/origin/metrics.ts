/**
 * The origin's metrics (contract §11): requests by route pattern and status, durations,
 * bytes, open uploads, parts written, each edge's feed lag, how long changes wait for edges,
 * webhook attempts by outcome, background work that failed, and unhandled rejections. GET /metrics; COFFER_METRICS_TOKEN guards it when set.
 */
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram } from 'prom-client';
import { DURATION_BUCKETS, httpMetrics } from '../metrics/registry.js';
import { BACKGROUND_TASKS, type BackgroundTask } from '../service/service.js';

export interface OriginMetrics {
  /** Times one change's wait for the edges. */
  changeAcknowledged(seconds: number): void;
  webhookAttempt(outcome: 'delivered' | 'retry' | 'failed'): void;
  backgroundFailure(task: BackgroundTask): void;
  unhandledRejection(): void;
  /** Registers the request hook and GET /metrics. */
  install(app: FastifyInstance): void;
}

/** What the metrics read from the edge feed (src/feed/hub.ts). */
export interface FeedGauges {
  readonly headSeq: number;
  lag(): Promise<Array<{ edge: string; events: number }>>;
}

export function originMetrics(reads: { openUploads(): Promise<number> }, hub: FeedGauges): OriginMetrics {
  const m = httpMetrics('origin');
  const parts = new Counter({ name: 'coffer_upload_parts_written_total', help: 'Upload parts received and kept.', registers: [m.registry] });
  const ack = new Histogram({ name: 'coffer_change_ack_seconds', help: 'How long a change waited for every live edge to acknowledge it.', buckets: DURATION_BUCKETS, registers: [m.registry] });
  const webhooks = new Counter({ name: 'coffer_webhook_deliveries_total', help: 'Webhook delivery attempts by outcome.', labelNames: ['outcome'], registers: [m.registry] });
  const background = new Counter({ name: 'coffer_background_failures_total', help: 'Runs of work no request waits for that failed, by task; retried later.', labelNames: ['task'], registers: [m.registry] });
  // Each task's series exists from the start, so a rate over it needs no first failure.
  for (const task of BACKGROUND_TASKS) background.labels(task).inc(0);
  new Gauge({ name: 'coffer_uploads_open', help: 'Uploads started and neither completed nor aborted.', registers: [m.registry], async collect() {
    this.set(await reads.openUploads());
  } });
  // One series per edge: their number is the fleet's size, and rows of edges gone a while are pruned.
  new Gauge({ name: 'coffer_edge_feed_lag_events', help: 'Events each edge has yet to acknowledge.', labelNames: ['edge'], registers: [m.registry], async collect() {
    this.reset();
    for (const { edge, events } of await hub.lag()) this.labels(edge).set(events);
  } });
  new Gauge({ name: 'coffer_event_head_seq', help: 'The newest event in the log.', registers: [m.registry], collect() { this.set(hub.headSeq); } });

  return {
    changeAcknowledged: (seconds) => ack.observe(seconds),
    webhookAttempt: (outcome) => webhooks.labels(outcome).inc(),
    backgroundFailure: (task) => background.labels(task).inc(),
    unhandledRejection: () => m.unhandledRejections.inc(),
    install(app) {
      app.addHook('onResponse', async (request, reply) => {
        const route = request.routeOptions.url ?? 'unmatched';
        m.requests.labels(route, request.method, String(reply.statusCode)).inc();
        m.duration.labels(route, request.method).observe(reply.elapsedTime / 1000);
        const received = Number(request.headers['content-length'] ?? 0);
        if (received > 0) m.bytesIn.labels(route).inc(received);
        const sent = Number(reply.getHeader('content-length') ?? 0);
        if (sent > 0) m.bytesOut.labels(route).inc(sent);
        if (route === '/collections/upload/file-progress' && reply.statusCode === 200) parts.inc();
      });
      app.get('/metrics', { schema: { hide: true }, config: { access: 'metrics' } }, async (_request, reply) => {
        reply.header('Content-Type', m.registry.contentType).header('Cache-Control', 'no-store');
        return m.registry.metrics();
      });
    },
  };
}
