/**
 * Prometheus metrics shared by the origin and the edge (contract §11): one registry per
 * process, names in base units with the `coffer_` prefix, and labels from bounded sets
 * (route patterns, status codes, outcomes; never a file id).
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DURATION_BUCKETS } from './tallied.js';

// Kept with the tallies, which an edge counts before it loads prom-client (edge/metrics.ts).
export { DURATION_BUCKETS };

export interface HttpMetrics {
  registry: Registry;
  requests: Counter<'route' | 'method' | 'status'>;
  duration: Histogram<'route' | 'method'>;
  bytesIn: Counter<'route'>;
  bytesOut: Counter<'route'>;
  /** Promise rejections nothing handled (unhandled.ts): each is a bug, logged where it is counted. */
  unhandledRejections: Counter;
}

/** A registry with the process's default metrics, the HTTP series and unhandled rejections. */
export function httpMetrics(processName: 'origin' | 'edge'): HttpMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ process: processName });
  // The event loop's delay is sampled once a second, not every 10 ms: an idle process otherwise
  // wakes 100 times a second for it, and a fleet of idle edges pays that per edge.
  collectDefaultMetrics({ register: registry, prefix: 'coffer_', eventLoopMonitoringPrecision: 1000 });
  // prom-client names these three gauges `_total`, which Prometheus keeps for counters; the
  // same counts remain, by type, in coffer_nodejs_active_handles, _requests and _resources.
  for (const name of ['handles', 'requests', 'resources']) registry.removeSingleMetric(`coffer_nodejs_active_${name}_total`);
  return {
    registry,
    requests: new Counter({ name: 'coffer_http_requests_total', help: 'HTTP requests answered, by route pattern, method and status.', labelNames: ['route', 'method', 'status'], registers: [registry] }),
    duration: new Histogram({ name: 'coffer_http_request_duration_seconds', help: 'Time from the request to the end of the answer.', labelNames: ['route', 'method'], buckets: DURATION_BUCKETS, registers: [registry] }),
    bytesIn: new Counter({ name: 'coffer_http_received_bytes_total', help: 'Request body bytes received.', labelNames: ['route'], registers: [registry] }),
    bytesOut: new Counter({ name: 'coffer_http_sent_bytes_total', help: 'Response body bytes sent.', labelNames: ['route'], registers: [registry] }),
    unhandledRejections: new Counter({ name: 'coffer_unhandled_rejections_total', help: 'Promise rejections nothing handled; each was logged at error.', registers: [registry] }),
  };
}

// Kept apart from prom-client: an edge checks a scrape's token before it loads prom-client.
export { checkScrape } from './scrape-token.js';
